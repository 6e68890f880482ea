/**
 * `startLocalSystem`: the embedded setup in one call — a Temporal dev server, a SQLite conversation store, a worker
 * and a client in this process.
 */
import { join, resolve } from 'node:path';
import { Client } from '@temporalio/client';
import { IllegalStateError } from '@temporalio/common';
import { type LogLevel, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from './client/agent-client';
import { type DevServer, type DevServerOptions, startDevServer } from './devserver/server';
import { generateCodecToken, startCodecServer, uiOrigins } from './codec/codec-server';
import { canCheckPeerUser } from './codec/peer-user';
import type { ModelProvider } from './model/provider';
import { modelFromEnv } from './model/registry';
import type { ConversationStore } from './store/conversation-store';
import { ensurePrivateDir } from './store/file-modes';
import { SqliteConversationStore } from './store/sqlite';
import { type AgentWorker, type AgentWorkerOptions, createAgentWorker } from './worker/create-worker';
import { LocalEventHub } from './events/event-hub';
import { installMetricsRuntime, type MetricsEndpointOptions } from './worker/metrics';
import { workerLogger } from './worker/logger';
import { checkWorkflowSlots, workflowCacheOf } from './worker/workflow-slots';
import type { ThreadOptions } from './workflows/contract';
import type { TracingOption } from './tracing/config';
import { tracingFor } from './tracing/install';
import { tracingClientInterceptors } from './tracing/interceptors';
import { stopOnSignal } from './stop-on-signal';
import { DEFAULT_AGENT } from './core/agents';

/** The worker's options that `startLocalSystem` passes on as they are (their docs: {@link AgentWorkerOptions}). */
const WORKER_OPTIONS = [
  'tools',
  'toolSources',
  'toolLifecycle',
  'systemPrompt',
  'completionPolicy',
  'compactionThreshold',
  'maxCachedWorkflows',
  'workflowBundle',
  'workerOptions',
  'payloadCodec',
  'maxInputBytes',
  'eventsEndpoint',
  'resourceTargets',
  'prices',
  'limits',
  'agents',
  'resolveAgent',
] as const satisfies readonly (keyof AgentWorkerOptions)[];

/**
 * Options of {@link startLocalSystem}: the worker's own (as {@link AgentWorkerOptions} documents them) and what the
 * embedded setup adds. Everything is optional.
 */
export interface LocalSystemOptions extends Pick<AgentWorkerOptions, (typeof WORKER_OPTIONS)[number]> {
  /** @default modelFromEnv(): `INFINITY_MODEL`, or the simulated model */
  model?: ModelProvider;
  /** Folder for the Temporal and conversation databases. @default '.temporal/local' */
  dataDir?: string;
  /** A running server to use instead of starting one, or options for the one started. @default a dev server started here */
  devServer?: DevServer | DevServerOptions;
  /** @default a SQLite store in `dataDir` */
  store?: ConversationStore;
  /** @default 'infinity-agents' */
  taskQueue?: string;
  /** Options of every thread the system's client starts (continue-as-new bounds, `titleSearchAttribute`). @default none */
  threadOptions?: ThreadOptions;
  /**
   * How inputs travel (see `AgentClientOptions.signalNames`): `by-kind` when the system starts its own dev server
   * (its one worker is this build), `input` on a server given to it, where older workers may poll the queue. A dev
   * server it starts registers `Title`, so its threads write it too (`ThreadOptions.titleSearchAttribute`), except
   * with `payloadCodec`: a search attribute is stored in plaintext, past any codec.
   * @default 'by-kind' on its own dev server, else 'input'
   */
  signalNames?: 'input' | 'by-kind';
  /**
   * With `payloadCodec`: serve it as the Web UI's codec endpoint, so the UI shows payloads decoded. Callers send its
   * `token` (made up when not given: `LocalSystem.codecToken`) as a bearer token. The dev server started here gives
   * its UI the endpoint without the token, which the UI would show any local user (`/api/v1/settings`): the endpoint
   * serves a browser at that UI's origin only over a connection the kernel says this process's own user opened
   * (Linux; `startCodecServer`'s `sameUserBrowser`). A browser that is no process of this user on this machine (WSL2's
   * Windows browser, another account's) is refused then: paste `<codecUrl>/<codecToken>` into the UI's own "Codec
   * Server" setting, which that browser keeps to itself, or set `tokenInUiSettings`. Where the connection's user cannot
   * be checked (macOS, Windows) the UI gets the token in the endpoint's path, as with `tokenInUiSettings`. Never on a
   * command line (`devServer.uiCodecEndpoint`).
   * @default none
   */
  codecEndpoint?: {
    token?: string;
    port?: number;
    /**
     * Give the UI the endpoint with the token in its path, for any browser: any local user can then read the token
     * in the UI's settings and decrypt every payload with it.
     * @default false on Linux, true elsewhere
     */
    tokenInUiSettings?: boolean;
  };
  /**
   * Serve Prometheus metrics (Temporal's and `infinity_*`) at `http://<host>:<port>/metrics`. Installs the process's
   * Temporal runtime, so it must be the first Temporal thing the process does (see `installMetricsRuntime`).
   * @default none
   */
  metrics?: MetricsEndpointOptions;
  /**
   * OpenTelemetry traces of the worker and of `client` (a user turn sent through it starts its trace); see
   * `AgentWorkerOptions.tracing`.
   * @default undefined (the standard `OTEL_*` variables decide; off when they say nothing)
   */
  tracing?: TracingOption;
  /**
   * The first SIGINT or SIGTERM (one Ctrl-C) shuts the system down — worker, dev server, store — and then ends the
   * process with that signal, unless the app has its own listener for it (added after this call), which then decides.
   * `false`: the system installs no listener; the app calls `shutdown()` itself (Temporal's runtime still stops the
   * worker on those signals).
   * @default true
   */
  stopOnSignal?: boolean;
  /**
   * Level of Temporal's own logs (the worker's start and stop, its workflow bundle: some fifteen blocks per start at
   * INFO) when the process has no Temporal runtime yet; `'INFO'` or `'DEBUG'` to see them. A process that installed
   * `Runtime` itself keeps its logger.
   * @default 'WARN'
   */
  logLevel?: LogLevel;
}

/** The keys of `options` that are set, and only those. */
function definedOf<T extends object, K extends keyof T>(options: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) if (options[k] !== undefined) out[k] = options[k];
  return out;
}

/** What {@link startLocalSystem} started: a dev server, a store, a worker and a client; `shutdown()` stops them. */
export interface LocalSystem {
  devServer: DevServer;
  /**
   * A client of the worker's task queue, with the store and the worker's live events (`thread.events()`). It shares the
   * worker's connection and starts new threads eagerly (`AgentClientOptions.eagerStart`).
   */
  client: AgentClient;
  worker: AgentWorker;
  store: ConversationStore;
  /** Its SQLite file, when the system created the store. */
  storePath?: string;
  events: LocalEventHub;
  /** Live events over HTTP, with `eventsEndpoint`. */
  eventsUrl?: string;
  /** The token of `eventsUrl` (given in `eventsEndpoint.token`, or made at start), for clients in other processes. */
  eventsToken?: string;
  /** The Web UI's codec endpoint, with `codecEndpoint`. */
  codecUrl?: string;
  /**
   * Its token (given in `codecEndpoint.token`, or made at start): `Authorization: Bearer <token>` (`temporal
   * --codec-endpoint <codecUrl> --codec-auth 'Bearer <token>'`), or `<url>/<token>/decode`.
   */
  codecToken?: string;
  /** The Prometheus endpoint, with `metrics`. */
  metricsUrl?: string;
  /** Link to a thread in the Temporal Web UI. */
  threadUrl(threadId: string): string | undefined;
  /** Stops the worker, then closes the store it opened and stops the dev server it started; once, however called. */
  shutdown(): Promise<void>;
}

/** Temporal's runtime with our logger at `level`, unless the process has one already (its own, or a worker's). */
function installQuietRuntime(level: LogLevel): void {
  try {
    Runtime.install({ logger: workerLogger(level) });
  } catch (e) {
    if (!(e instanceof IllegalStateError)) throw e;
  }
}

function isRunning(s: LocalSystemOptions['devServer']): s is DevServer {
  return typeof (s as DevServer | undefined)?.stop === 'function';
}

/**
 * The embedded setup in one call: a Temporal dev server (the CLI is installed on first use), a SQLite conversation
 * store, a worker and a client in this process. For trying things, tests and single-process apps; for workers and
 * clients apart, see {@link createAgentWorker} and {@link AgentClient}.
 *
 * @example
 * ```ts
 * import { SimulatedModel, startLocalSystem } from 'infinity-temporal';
 *
 * const system = await startLocalSystem({ model: new SimulatedModel(), tools: [getBuildStatus] });
 * const thread = system.client.thread('demo');
 * await thread.sendUserText('Is build 42 green yet?');
 * await thread.waitForIdle({ settled: true });
 * console.log(`in the Temporal UI: ${system.threadUrl('demo')}`);
 * await system.shutdown();
 * ```
 */
export async function startLocalSystem(options: LocalSystemOptions = {}): Promise<LocalSystem> {
  // Before anything starts: a misconfigured model fails here, with nothing to clean up, and so do workflow task slots
  // above half the cache (decision 74), which the worker would refuse only once the dev server ran.
  const model = options.model ?? modelFromEnv();
  checkWorkflowSlots(options.workerOptions ?? {}, workflowCacheOf(options));
  const logLevel = options.logLevel ?? 'WARN';
  const metricsUrl = options.metrics && installMetricsRuntime(options.metrics, logLevel);
  if (!options.metrics) installQuietRuntime(logLevel);
  const tracing = tracingFor(options.tracing);
  const dataDir = resolve(options.dataDir ?? join('.temporal', 'local'));
  ensurePrivateDir(dataDir); // conversations and the server's database: 0700 (security item 15)
  const cleanups: (() => Promise<void>)[] = [];
  // Once, however many callers (the app, a signal): a second run would stop things again, in the wrong order.
  let stopped: Promise<void> | undefined;
  const cleanup = () =>
    (stopped ??= (async () => {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    })());
  const codec = options.payloadCodec;
  let uiOriginList: string[] = [];
  const codecToken = options.codecEndpoint && (options.codecEndpoint.token ?? generateCodecToken());
  // The UI's own user, checked by the kernel, instead of a token its settings would publish (issue 38, finding 4).
  const { tokenInUiSettings, ...codecOptions } = options.codecEndpoint ?? {};
  const sameUserBrowser = !tokenInUiSettings && canCheckPeerUser();
  const codecServer =
    codec && options.codecEndpoint
      ? await startCodecServer({
          codec,
          ...codecOptions,
          token: codecToken!,
          // The UI's origin is known once its server runs (below); until then no browser may call.
          origins: (origin) => uiOriginList.includes(origin),
          sameUserBrowser,
        })
      : undefined;
  if (codecServer) cleanups.push(() => codecServer.close());
  const ownServer = !isRunning(options.devServer);
  try {
    const devServer = isRunning(options.devServer)
      ? options.devServer
      : await startDevServer({
          dbFilename: join(dataDir, 'temporal.sqlite'),
          ...(codecServer && { uiCodecEndpoint: sameUserBrowser ? codecServer.url : codecServer.uiEndpoint! }),
          ...options.devServer,
        });
    if (ownServer) cleanups.push(() => devServer.stop());
    if (devServer.uiUrl) uiOriginList = uiOrigins(devServer.uiUrl);
    // Decision 62: one build serves a server of its own, which registers `Title`; not with a codec, whose payloads
    // search attributes would bypass (the client drops it then too: security item 6).
    const signalNames = options.signalNames ?? (ownServer ? 'by-kind' : 'input');
    const threadOptions: ThreadOptions | undefined =
      ownServer && !codec ? { titleSearchAttribute: true, ...options.threadOptions } : options.threadOptions;
    const storePath = options.store ? undefined : join(dataDir, 'conversations.sqlite');
    const store = options.store ?? new SqliteConversationStore(storePath!);
    if (!options.store) cleanups.push(() => store.close());
    const connection = await NativeConnection.connect({ address: devServer.address });
    cleanups.push(() => connection.close());
    const events = new LocalEventHub();
    const taskQueue = options.taskQueue ?? 'infinity-agents';
    const worker = await createAgentWorker({
      connection,
      namespace: devServer.namespace,
      taskQueue,
      store,
      model,
      ...definedOf(options, WORKER_OPTIONS),
      signalNames,
      onEvent: (e) => events.emit(e),
      tracing: tracing ? tracing.options : false,
    });
    const running = worker.run();
    cleanups.push(() => worker.shutdown());
    running.catch((e) => console.error('agent worker stopped:', e));
    const client = new AgentClient({
      client: new Client({
        connection,
        namespace: devServer.namespace,
        ...(codec && { dataConverter: { payloadCodecs: [codec] } }),
        ...(tracing && { interceptors: tracingClientInterceptors() }),
      }),
      taskQueue,
      store,
      events,
      signalNames,
      // Its worker shares the connection: new threads' first tasks skip the task queue (decision 72).
      eagerStart: true,
      ...(threadOptions && { threadOptions }),
      // The worker's agents (issue 40): a start naming another is refused before it starts. A resolver may define
      // any name, so with one the client checks names for form only.
      ...(!options.resolveAgent && { agents: [DEFAULT_AGENT, ...(options.agents ?? []).map((a) => a.name)] }),
    });
    if (options.stopOnSignal !== false) {
      const removeListeners = stopOnSignal(cleanup);
      cleanups.push(async () => removeListeners());
    }
    return {
      devServer,
      client,
      worker,
      store,
      ...(storePath && { storePath }),
      events,
      ...(worker.eventsUrl && { eventsUrl: worker.eventsUrl }),
      ...(worker.eventsToken && { eventsToken: worker.eventsToken }),
      ...(codecServer && { codecUrl: codecServer.url, codecToken: codecToken! }),
      ...(metricsUrl && { metricsUrl }),
      threadUrl: (id) => devServer.workflowUrl(id),
      shutdown: cleanup,
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}
