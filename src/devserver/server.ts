/**
 * Starts and stops `temporal server start-dev` on free ports with a SQLite file in WAL mode, our search attributes
 * registered, and the dynamic config the runtime relies on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { findTemporalCli } from './cli';
import { killOnExit } from './kill-on-exit';

export interface DevServerOptions {
  /**
   * SQLite file of the server. Without one the server is throwaway: its file goes in a new temp dir, which `stop()`
   * removes.
   * @default a new file in a temp dir
   */
  dbFilename?: string;
  /** gRPC port. @default a free port */
  port?: number;
  /** Serve the Web UI. @default true */
  ui?: boolean;
  /** Web UI port. @default a free port */
  uiPort?: number;
  namespace?: string;
  /**
   * A remote codec endpoint for the Web UI (see `startCodecServer`): encrypted payloads then read as JSON. It reaches
   * the server through a 0600 settings file (`--env-file`), never its command line, which any local user can read
   * (`ps`, `/proc/<pid>/cmdline`); the file is removed once the server runs. The UI hands it to every browser, and to
   * any local process, at `/api/v1/settings`: a URL with a secret in it is published there.
   */
  uiCodecEndpoint?: string;
  /** Extra dynamic config, e.g. `{ 'limit.historyCount.suggestContinueAsNew': 40 }`. */
  dynamicConfig?: Record<string, unknown>;
  /** Path of the CLI; found or installed when omitted. */
  cliPath?: string;
  extraArgs?: string[];
  /** Milliseconds to wait for the server to answer. @default 60000 (60 s) */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface DevServer {
  /** `host:port` of the gRPC frontend. */
  address: string;
  namespace: string;
  dbFilename: string;
  /** Base URL of the Web UI, when enabled. */
  uiUrl?: string;
  pid: number;
  /** Link to a workflow (= thread) in the Web UI. */
  workflowUrl(workflowId: string): string | undefined;
  stop(): Promise<void>;
}

/** Search attributes the thread workflow writes (docs/architecture.md, "Data model"). */
export const THREAD_SEARCH_ATTRIBUTES = {
  AgentStatus: 'Keyword',
  ParentThreadId: 'Keyword',
  ThreadKind: 'Keyword',
} as const;

/**
 * The thread's title as a Text attribute (found by its words: `Title = 'flaky'`), which the UI can show as a list
 * column. Optional for a server: threads write it only with `ThreadOptions.titleSearchAttribute` (decision 62).
 */
export const TITLE_SEARCH_ATTRIBUTE = { Title: 'Text' } as const;

/**
 * A fork's source thread (`AgentClient.forkThread`, issue 28 §1), so `ForkedFrom = '<thread>'` lists a thread's forks.
 * Optional for a server: the client starts a fork without it where it is not registered.
 */
export const FORK_SEARCH_ATTRIBUTE = { ForkedFrom: 'Keyword' } as const;

/**
 * The thread's agent (issue 40), so `AgentName = 'reviewer'` lists an agent's threads. Optional for a server: a client
 * starts threads without it where it is not registered, and a thread writes it later only if its start had it.
 */
export const AGENT_SEARCH_ATTRIBUTE = { AgentName: 'Keyword' } as const;

/**
 * Dynamic config we rely on. Eager activities save a round trip per slice. The history service reads each queue
 * (transfer: "dispatch this workflow task"; timer; visibility) at most 20 times a second by default, which holds a
 * signal's workflow task for up to 50 ms before matching sees it: on one shard that is most of a turn's latency.
 */
/** A host name no request carries (`.invalid` is reserved, RFC 2606): the dev server's HTTP API refuses every request. */
export const HTTP_API_CLOSED = 'infinity-temporal.invalid';

export const DEFAULT_DYNAMIC_CONFIG: Record<string, unknown> = {
  'system.enableActivityEagerExecution': true,
  'system.enableEagerWorkflowStart': true,
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxPollRPS': 1000,
  'history.visibilityProcessorMaxPollRPS': 1000,
  // A thread's workflow task fails only after a bad deploy or a workflow bug: flag it (the `TemporalReportedProblems`
  // search attribute that `threads --stuck` lists) at the first failure rather than after the server's default 5,
  // which takes about a minute because a failing SDK worker lets later attempts time out (10 s each). Worker
  // deployments (versioning) need no dynamic config on this server version.
  'system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute': 1,
  // Signals that arrive while a workflow task runs are buffered; past 100 (the default) the server fails that task and
  // the worker replays the run from the start, so a flood into one thread made no progress at all until it stopped.
  'history.maximumBufferedEventsBatch': 2000,
  // Signals one run accepts (default 10,000). Under a continuous flood a thread can continue-as-new only once no signal
  // arrives during its workflow task; the cap brings that moment sooner. Senders retry (inbox/busy.ts).
  'history.maximumSignalsPerExecution': 3000,
  // Task queue priority and fairness (decision 60): root threads' tasks go before children's and event handlers', and
  // agent trees share a queue in proportion to their weights. Priority is on by default; fairness is not.
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
  // Priority and fairness hold within a task queue partition; one process gains nothing from four (the default), and
  // with one a backlog is served in priority order rather than partition by partition.
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  // The server's HTTP API (a port of its own that cannot be turned off) takes any Host and, from a browser, a
  // cross-origin "simple" POST: any web page could signal text into a thread, and a DNS-rebinding page read every
  // history. Nothing here uses it (the SDK, the `temporal` CLI and the UI speak gRPC), so it accepts no Host at all:
  // every request gets 403 "Host not allowed". `dynamicConfig` can open it (a list of host patterns).
  'frontend.httpAllowedHosts': [HTTP_API_CLOSED],
};

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolvePort(addr.port) : reject(new Error('no port'))));
    });
  });
}

async function waitUntilServing(
  address: string,
  namespace: string,
  deadline: number,
  child: ChildProcess,
  tail: () => string,
) {
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited with code ${child.exitCode}:\n${tail()}`);
    try {
      const conn = await Connection.connect({ address, connectTimeout: 2000 });
      try {
        await conn.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await conn.close();
      }
    } catch (e) {
      lastError = e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`temporal dev server did not become ready at ${address}: ${String(lastError)}\n${tail()}`);
}

async function waitForUi(uiUrl: string, deadline: number, tail: () => string): Promise<void> {
  for (;;) {
    try {
      const res = await fetch(uiUrl, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the dev server's Web UI did not answer at ${uiUrl}\n${tail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Spawns the CLI with umask 077, so the database files the server creates (the SQLite file, its -wal and -shm) are
 * 0600 (security item 15). Through `sh`'s `exec`: the child keeps its pid, so stopping it still stops the server.
 * Pre-creating the file instead does not work: the CLI sets up its schema only when the file does not exist yet.
 * Windows has no umask; its files take the directory's ACL.
 */
function spawnPrivate(cli: string, args: string[]): ChildProcess {
  const stdio: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];
  const env = serverEnv();
  if (process.platform === 'win32') return spawn(cli, args, { stdio, env });
  return spawn('/bin/sh', ['-c', 'umask 077 && exec "$0" "$@"', cli, ...args], { stdio, env });
}

/** What the server needs of our environment to run (its temp dir, home, locale, time zone); never the app's secrets. */
const SERVER_ENV = ['PATH', 'HOME', 'TMPDIR', 'TMP', 'TEMP', 'LANG', 'LC_ALL', 'TZ', 'SYSTEMROOT', 'USERPROFILE'];

/**
 * The dev server's environment: only {@link SERVER_ENV} of ours. An app's environment holds its model keys and
 * tokens, and the server is a process of its own that no secret of the app needs to reach.
 */
export function serverEnv(from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of SERVER_ENV) if (from[k] !== undefined) env[k] = from[k];
  return env;
}

/**
 * Flags for the CLI in a file of its own (the CLI's environment file, YAML: `env.default.<flag>`), so that their values
 * stay off the command line, which every local user can read. The file is 0600 in a new 0700 directory. The CLI then
 * reads this file instead of the user's own (`~/.config/temporalio/temporal.yaml`), for this server only.
 */
export function privateFlagsFile(flags: Record<string, string>): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'infinity-temporal-flags-'));
  const path = join(dir, 'env.yaml');
  // A JSON string is a YAML double-quoted scalar.
  const lines = Object.entries(flags).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`);
  writeFileSync(path, ['env:', '  default:', ...lines, ''].join('\n'), { mode: 0o600 });
  return { dir, path };
}

/** Starts on free ports this many times when another process took a port between our choice and the server's bind. */
const PORT_RACE_ATTEMPTS = 3;

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cli = options.cliPath ?? findTemporalCli({ log: options.log });
  // Ports this function chose may be taken by another process before the server binds them (two apps starting at
  // once), and the server binds more than the ones we name (its HTTP API, its internal services): start again on
  // others. Ports the caller chose are tried once.
  const chosen = options.port === undefined && (options.uiPort === undefined || options.ui === false);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(cli, options);
    } catch (e) {
      if (!chosen || attempt >= PORT_RACE_ATTEMPTS || !/address already in use/i.test(String(e))) throw e;
    }
  }
}

async function startOnce(cli: string, options: DevServerOptions): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const port = options.port ?? (await freePort());
  const ui = options.ui ?? true;
  const uiPort = ui ? (options.uiPort ?? (await freePort())) : undefined;
  // A temp dir we made is ours to remove at stop: nobody else knows its name, and a run a day would fill a disk.
  const ownDir = options.dbFilename === undefined ? mkdtempSync(join(tmpdir(), 'infinity-temporal-')) : undefined;
  const dbFilename = options.dbFilename ?? join(ownDir!, 'temporal.sqlite');
  const removeOwnDir = () => ownDir && rmSync(ownDir, { recursive: true, force: true });
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', dbFilename];
  args.push('--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=NORMAL', '--log-level', 'error');
  if (namespace !== 'default') args.push('--namespace', namespace);
  // A file only the CLI reads at its start, removed once the server runs (below, and at stop should it fail first).
  const settings =
    ui && options.uiCodecEndpoint ? privateFlagsFile({ 'ui-codec-endpoint': options.uiCodecEndpoint }) : undefined;
  const removeSettings = () => settings && rmSync(settings.dir, { recursive: true, force: true });
  if (!ui) args.push('--headless');
  else {
    args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
    if (settings) args.push('--env-file', settings.path);
  }
  for (const [k, v] of Object.entries({
    ...THREAD_SEARCH_ATTRIBUTES,
    ...TITLE_SEARCH_ATTRIBUTE,
    ...FORK_SEARCH_ATTRIBUTE,
    ...AGENT_SEARCH_ATTRIBUTE,
  }))
    args.push('--search-attribute', `${k}=${v}`);
  for (const [k, v] of Object.entries({ ...DEFAULT_DYNAMIC_CONFIG, ...options.dynamicConfig })) {
    args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
  }
  args.push(...(options.extraArgs ?? []));

  const child = spawnPrivate(cli, args);
  const cancelKill = killOnExit(child, 'SIGTERM');
  // Its first lines and its last: a Go panic says why at the top of a long stack trace (and "address already in use",
  // which starts it again on other ports, may be up there).
  const head: string[] = [];
  const lines: string[] = [];
  let dropped = 0;
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      if (head.length < 20) head.push(line);
      else lines.push(line);
    }
    if (lines.length > 40) dropped += lines.splice(0, lines.length - 40).length;
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const tail = () => [...head, ...(dropped > 0 ? [`… (${dropped} lines)`] : []), ...lines].join('\n');
  const address = `127.0.0.1:${port}`;
  const stop = async () => {
    cancelKill();
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    removeOwnDir();
    removeSettings();
  };
  const uiUrl = ui ? `http://127.0.0.1:${uiPort}` : undefined;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  try {
    await waitUntilServing(address, namespace, deadline, child, tail);
    // The UI comes up a moment after the frontend; a link printed before it answers would not open.
    if (uiUrl) await waitForUi(uiUrl, deadline, tail);
  } catch (e) {
    await stop();
    throw e;
  } finally {
    removeSettings();
  }
  return {
    address,
    namespace,
    dbFilename,
    uiUrl,
    pid: child.pid ?? -1,
    workflowUrl: (id) => uiUrl && `${uiUrl}/namespaces/${namespace}/workflows/${encodeURIComponent(id)}`,
    stop,
  };
}
