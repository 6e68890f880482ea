/**
 * Test harness: a real worker on its own task queue against the suite's dev server, a real SQLite store file,
 * and readable one-line renderings of committed history for whole-conversation assertions.
 */
import type { AgentDefinition, AgentResolver } from '../src/activities/agents';
import type { ProviderLimits } from '../src/core/capacity';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { findTemporalCli } from '../src/devserver/cli';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterEach, inject } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { CompletionPolicy } from '../src/activities/completion';
import type { HistoryItem, ThreadEvent } from '../src/core/types';
import type { ModelProvider, ModelRequest } from '../src/model/provider';
import { ScriptedModel } from '../src/model/scripted';
import type { ConversationStore } from '../src/store/conversation-store';
import { SqliteConversationStore } from '../src/store/sqlite';
import { defineTool, type Tool, type ToolContext, type ToolLifecycle, type ToolSource } from '../src/tools/tool';
import { toolResult } from '../src/tools/messages';
import { type AgentWorker, createAgentWorker } from '../src/worker/create-worker';
import { LocalEventHub } from '../src/events/event-hub';
import type { MigratedThread } from '../src/client/migrate';
import type { ThreadOptions } from '../src/workflows/contract';

export interface TestSystem {
  client: AgentClient;
  temporal: Client;
  store: ConversationStore;
  /** The store's SQLite file; with `options.store`, what `options.storePath` names (its URL, say), else ''. */
  storePath: string;
  /** Undefined with `noWorker`. */
  worker?: AgentWorker;
  events: LocalEventHub;
  taskQueue: string;
  /** Every event emitted by the worker, in order. */
  seen: ThreadEvent[];
  connection: NativeConnection;
  shutdown(): Promise<void>;
}

export interface TestSystemOptions {
  model: ModelProvider;
  tools?: Tool[];
  maxCachedWorkflows?: number;
  completionPolicy?: Partial<CompletionPolicy>;
  compactionThreshold?: number;
  threadOptions?: ThreadOptions;
  /** Start no worker (e.g. when a separate process runs it). */
  noWorker?: boolean;
  storePath?: string;
  /** The conversation store to use instead of a new SQLite file (e.g. a PostgreSQL one); `shutdown` closes it. */
  store?: ConversationStore;
  /** Another dev server than the suite's. */
  address?: string;
  /** Lifecycle notices for remote tools (RAP). */
  toolLifecycle?: ToolLifecycle[];
  /** Tools per agent tree (RAP toolsets). */
  toolSources?: ToolSource[];
  /** Worker and client encode payloads with it; `temporal` stays a plain client that sees them encoded. */
  payloadCodec?: PayloadCodec;
  /** How worker (tools) and client send inputs (decision 62); default `input`. */
  signalNames?: 'input' | 'by-kind';
  /** Another workflow bundle than this build's (e.g. a frozen release's). */
  workflowBundlePath?: string;
  /** Provider limits of the worker (issue 27 §2). */
  limits?: ProviderLimits;
  /** More agents the worker hosts (issue 40). */
  agents?: AgentDefinition[];
  /** The worker's resolver of agent definitions (issue 40). */
  resolveAgent?: AgentResolver;
  /** The agents the client lets starts name (issue 40); default: any valid name. */
  clientAgents?: string[];
}

/** Fast retries for tests; the reference waits (1 s / 5 s / 30 s) are kept small but nonzero. */
export const FAST_POLICY: Partial<CompletionPolicy> = {
  unexpectedEndWaitMs: 50,
  transientWaitMs: 50,
  rateLimitWaitMs: 50,
  initiateTimeoutMs: 5_000,
  chunkTimeoutMs: 5_000,
};

export async function startTestSystem(options: TestSystemOptions): Promise<TestSystem> {
  const connection = await NativeConnection.connect({ address: options.address ?? inject('temporalAddress') });
  const storePath =
    options.storePath ?? (options.store ? '' : join(inject('scratchDir'), `store-${randomUUID()}.sqlite`));
  const store = options.store ?? new SqliteConversationStore(storePath);
  const taskQueue = `test-${randomUUID()}`;
  const events = new LocalEventHub();
  const seen: ThreadEvent[] = [];
  events.subscribe(undefined, (e) => seen.push(e));
  const worker = options.noWorker
    ? undefined
    : await createAgentWorker({
        connection,
        taskQueue,
        store,
        model: options.model,
        tools: options.tools,
        onEvent: (e) => events.emit(e),
        completionPolicy: { ...FAST_POLICY, ...options.completionPolicy },
        compactionThreshold: options.compactionThreshold,
        maxCachedWorkflows: options.maxCachedWorkflows,
        workflowBundle: { codePath: options.workflowBundlePath ?? inject('workflowBundlePath') },
        ...(options.payloadCodec && { payloadCodec: options.payloadCodec }),
        ...(options.signalNames && { signalNames: options.signalNames }),
        ...(options.toolLifecycle && { toolLifecycle: options.toolLifecycle }),
        ...(options.toolSources && { toolSources: options.toolSources }),
        ...(options.limits && { limits: options.limits }),
        ...(options.agents && { agents: options.agents }),
        ...(options.resolveAgent && { resolveAgent: options.resolveAgent }),
      });
  void worker?.run();
  const temporal = new Client({ connection });
  const agentTemporal = options.payloadCodec
    ? new Client({ connection, dataConverter: { payloadCodecs: [options.payloadCodec] } })
    : temporal;
  const client = new AgentClient({
    client: agentTemporal,
    taskQueue,
    store,
    events,
    threadOptions: options.threadOptions,
    ...(options.signalNames && { signalNames: options.signalNames }),
    ...(options.clientAgents && { agents: options.clientAgents }),
  });
  return {
    client,
    temporal,
    store,
    storePath,
    worker,
    events,
    taskQueue,
    seen,
    connection,
    async shutdown() {
      await worker?.shutdown();
      await connection.close();
      await store.close();
    },
  };
}

/** One line per history item; tool call ids are replaced by their order of appearance (#1, #2, ...). */
export function render(items: readonly HistoryItem[]): string[] {
  const ids = new Map<string, string>();
  const id = (raw: string) => {
    if (!ids.has(raw)) ids.set(raw, `#${ids.size + 1}`);
    return ids.get(raw)!;
  };
  return items.map((it) => {
    switch (it.kind) {
      case 'user':
        return `user: ${it.text}`;
      case 'assistant':
        return `assistant: ${it.text}`;
      case 'reasoning':
        return `reasoning: ${it.text}`;
      case 'tool_call':
        return `call ${id(it.id)} ${it.name} ${JSON.stringify(it.args)}`;
      case 'tool_result':
        return `result ${id(it.id)}: ${it.content.map((c) => (c.type === 'text' ? c.text : `[${c.mediaType}]`)).join(' ')}`;
      case 'subscription_event':
        return `event ${id(it.toolCallId)}: ${it.result.content.map((c) => (c.type === 'text' ? c.text : '')).join(' ')}`;
      case 'rewind':
        return `rewound to ${it.to} (branch ${it.branch})`;
    }
  });
}

/**
 * A whole history as the text of its snapshot file under `test/__snapshots__/<test>/<scenario>.txt`
 * (`await expect(historyFile(items)).toMatchFileSnapshot(...)`), so a change of the thread rules shows up as a reviewed
 * diff: one line per item as {@link render} gives it (a newline inside an item shows as `\n`), each run-specific id
 * named in `names` (a thread id, a tool call id) replaced by its stable name.
 */
export function historyFile(items: readonly HistoryItem[], names: Record<string, string> = {}): string {
  const pairs = Object.entries(names).sort((a, b) => b[0].length - a[0].length);
  const lines = render(items).map((line) =>
    pairs.reduce((l, [raw, name]) => l.split(raw).join(name), line.replace(/\n/g, '\\n')),
  );
  return `${lines.join('\n')}\n`;
}

/** Polls `fn` until it returns a truthy value. */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A release's frozen workflow code (`test/fixtures/bundles/<release>/`, e.g. `v0.12`). */
export const releaseBundle = (release: string): string =>
  join(__dirname, 'fixtures', 'bundles', release, 'workflows-bundle.js');

/**
 * The bridge release (decision 85): 0.12 replays the runs of every release from 0.1 and has `migrate`, so a thread
 * parked on a release older than the window reaches this one only through it.
 */
export const BRIDGE = 'v0.12';

/**
 * What a user on a release older than the window does before upgrading (docs/upgrading.md): a worker of the bridge
 * release (its frozen workflow code; `worker` gives its model, tools and completion policy) serves `sys`'s task queue,
 * `migrateThreads` moves `threadIds` onto new runs, and the worker goes once each new run's first workflow task has
 * run on it. No other worker may serve the queue meanwhile. Returns the report's entries for those threads.
 */
export async function moveThroughBridge(
  sys: TestSystem,
  threadIds: readonly string[],
  worker: { model: ModelProvider; tools?: Tool[]; completionPolicy?: Partial<CompletionPolicy> },
): Promise<MigratedThread[]> {
  const before = new Date();
  const bridge = await createAgentWorker({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    store: sys.store,
    model: worker.model,
    tools: worker.tools,
    completionPolicy: { ...FAST_POLICY, ...worker.completionPolicy },
    workflowBundle: { codePath: releaseBundle(BRIDGE) },
  });
  const running = bridge.run();
  try {
    // Visibility lists a run a moment after it starts.
    await eventually(
      async () => (await sys.client.migrateThreads({ before, threadIds, dryRun: true })).found === threadIds.length,
      20_000,
      'the threads listed for the move',
    );
    const { threads } = await sys.client.migrateThreads({ before, threadIds });
    for (const t of threads.filter((t) => t.outcome === 'moved'))
      await eventually(
        async () =>
          (await sys.temporal.workflow.getHandle(t.threadId, t.newRunId).fetchHistory()).events?.some(
            (e) => e.workflowTaskCompletedEventAttributes,
          ),
        20_000,
        `the bridge's first task of ${t.threadId}'s new run`,
      );
    return threads;
  } finally {
    bridge.shutdown();
    await running;
  }
}

const HISTORIES_DIR = join(__dirname, 'fixtures', 'histories');

/**
 * Replays this thread's Temporal history against the current workflow code (fails on nondeterminism) and, with
 * RECORD_HISTORIES=<release>, saves it under test/fixtures/histories/<release>/ for the replay gate of later
 * versions. A recorded history is never overwritten: released sets are the record of threads waiting in users'
 * databases.
 */
export async function checkReplay(
  thread: { threadId: string; workflow: { fetchHistory(): Promise<unknown> } },
  name: string,
  address: string = inject('temporalAddress'),
  /** The run to record (default: the latest); pass the run the handle was made for. */
  runId?: string,
): Promise<void> {
  const history = await thread.workflow.fetchHistory();
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: name },
    history,
    thread.threadId,
  );
  const release = process.env.RECORD_HISTORIES;
  if (release) {
    if (!/^v\d+\.\d+$/.test(release))
      throw new Error(`RECORD_HISTORIES must name a release set like v0.2, got '${release}'`);
    const dir = join(HISTORIES_DIR, release);
    const file = join(dir, `${name}.json`);
    if (existsSync(file)) return;
    // The CLI writes the canonical proto3 JSON that `historyFromJSON` reads.
    const json = execFileSync(
      findTemporalCli({ install: false }),
      [
        'workflow',
        'show',
        '--workflow-id',
        thread.threadId,
        ...(runId ? ['--run-id', runId] : []),
        '--address',
        address,
        '--output',
        'json',
      ],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, json);
  }
}

/** An async tool that only records its calls in `sink`; the test delivers the results. */
export function recordingTool(name: string, sink: ToolContext[]): Tool {
  return defineTool({
    name,
    description: 'a call whose result the test delivers',
    parameters: { type: 'object' },
    execute(_args, ctx) {
      sink.push(ctx);
    },
  });
}

/** `get_build_status`: answers `Build <id>: green` through the input queue 10 ms after the call. */
export function greenBuildTool(): Tool {
  return defineTool<{ build_id: string }>({
    name: 'get_build_status',
    description: 'Look up a CI build',
    parameters: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
    execute(args, ctx) {
      setTimeout(() => void ctx.send(toolResult(ctx, `Build ${args.build_id}: green`)), 10);
    },
  });
}

/**
 * The README's restore of a lost store: stop the system's worker, close its store, drop stale `-wal`/`-shm`, put the
 * backup in place, and start a new worker (same task queue) on the restored file. The caller shuts both down.
 */
export async function restoreStore(
  sys: TestSystem,
  backup: string,
  model: ModelProvider,
): Promise<{ worker: AgentWorker; store: SqliteConversationStore }> {
  await sys.worker!.shutdown();
  await sys.store.close();
  rmSync(`${sys.storePath}-wal`, { force: true });
  rmSync(`${sys.storePath}-shm`, { force: true });
  copyFileSync(backup, sys.storePath);
  const store = new SqliteConversationStore(sys.storePath);
  const worker = await createAgentWorker({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    store,
    model,
    completionPolicy: FAST_POLICY,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  void worker.run();
  return { worker, store };
}

/** A store the lost-store scenarios restore into: the second worker and its store. */
export interface RestoredStore {
  worker: AgentWorker;
  store: SqliteConversationStore;
}

/** The lost-store scenarios' setup, shared by test/store-lost.test.ts and test/soak/poison.soak.test.ts. */
export interface LostStoreSetup {
  /** A test system on a SQLite file of its own in the scratch directory (the file the test then removes or replaces). */
  start(model: ModelProvider): Promise<TestSystem>;
  /** The README's restore ({@link restoreStore}) for the system `start` gave. */
  restore(backup: string, model: ModelProvider): Promise<RestoredStore>;
  /** A model that answers every text with `ok: <the last user text>`. */
  echoModel(): ScriptedModel;
}

/**
 * Call inside a `describe`: each test there may `start` a system and `restore` its store; after each test both workers
 * and stores are shut down.
 */
export function lostStoreSetup(prefix: string): LostStoreSetup {
  let sys: TestSystem | undefined;
  let second: RestoredStore | undefined;
  afterEach(async () => {
    await second?.worker.shutdown();
    await second?.store.close();
    await sys?.shutdown();
    sys = second = undefined;
  });
  const lastUser = (req: ModelRequest) => [...req.messages].reverse().find((m) => m.role === 'user')?.text ?? '';
  return {
    async start(model) {
      sys = await startTestSystem({ model, storePath: join(inject('scratchDir'), `${prefix}-${randomUUID()}.sqlite`) });
      return sys;
    },
    async restore(backup, model) {
      if (!sys) throw new Error('lostStoreSetup: restore before start');
      return (second = await restoreStore(sys, backup, model));
    },
    echoModel: () => new ScriptedModel((req) => ({ text: `ok: ${lastUser(req)}` })),
  };
}

/**
 * Starts another worker on `sys`'s task queue, connection and store, with this build's bundle (as a restarted or
 * replacement worker would be); resolves to it and its run. `stop()` shuts it down and waits for the run to end.
 */
export async function replacementWorker(
  sys: Pick<TestSystem, 'connection' | 'taskQueue' | 'store'>,
  model: ModelProvider,
): Promise<{ worker: AgentWorker; stop(): Promise<void> }> {
  const worker = await createAgentWorker({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    store: sys.store,
    model,
    completionPolicy: FAST_POLICY,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      await worker.shutdown();
      await running;
    },
  };
}
