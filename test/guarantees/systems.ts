/**
 * One running system per (defaults, store, signal names) of the matrix, as a user would build it:
 * - `startLocalSystem`: its own dev server, its defaults (`by-kind` unless the cell says `input`), the cell's store;
 * - `dev`: the CLI's `infinity-temporal dev` process with its own dev server and SQLite store, the scenarios' tools
 *   (`--tools dev-tools.ts`) and an OpenAI-compatible model on loopback that records what it was sent;
 * - `worker+client`: the README's `createAgentWorker` and `AgentClient` on the suite's dev server.
 * With `agents: several`, each also hosts `planner` and `helper` (agents.ts; `dev` through `--tools dev-agents.ts`).
 * The test talks to each through an `AgentClient` of its own where it must (the `dev` process is another process),
 * and delivers by every path of the matrix.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { expect, inject } from 'vitest';
import { AgentClient } from '../../src/client/agent-client';
import type { InputMessage, ToolResultContent } from '../../src/core/types';
import { findTemporalCli } from '../../src/devserver/cli';
import type { LocalEventHub } from '../../src/events/event-hub';
import { readLocalEventsToken } from '../../src/events/local-token';
import { prepareInput, signalFor } from '../../src/inbox/deliver';
import { startLocalSystem } from '../../src/local-system';
import { ScriptedModel } from '../../src/model/scripted';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import type { CommitRequest, ConversationStore } from '../../src/store/conversation-store';
import { InMemoryConversationStore } from '../../src/store/memory';
import { PostgresConversationStore } from '../../src/store/postgres';
import { SqliteConversationStore } from '../../src/store/sqlite';
import type { ThreadOptions } from '../../src/workflows/contract';
import { createAgentWorker } from '../../src/worker/create-worker';
import { firstText } from '../../src/model/projection';
import { cliRunner, lines } from '../cli-process';
import { createTestDatabase } from '../postgres';
import { guaranteeAgents } from './agents';
import { SLOW, scriptStep } from './content';
import type { MatrixCell } from './matrix';
import { guaranteeTools } from './tools';
import { startWireModel, textOf, type WireModel } from './wire-model';

const run = promisify(execFile);

export interface GuaranteeSystem {
  label: string;
  signalNames: 'input' | 'by-kind';
  address: string;
  taskQueue: string;
  /** The store as this process sees it (the `dev` process's SQLite file opened here too). */
  store: ConversationStore;
  /** What the CLI's `--store` names ('' for memory). */
  storeArg: string;
  /**
   * A client for the cell's slice path: the system's own for `local`, with `localSliceBudgetMs` for `adopted`; `extra`
   * thread options on top (a scenario's lowered limits).
   */
  client(slicePath: MatrixCell['slicePath'], extra?: ThreadOptions): AgentClient;
  /** Threads whose first commit of a result or event fails once (the `retry` slice path). */
  failOnce: Set<string>;
  /** Whether the model was shown `content` as a tool result, byte for byte. */
  modelSaw(content: readonly ToolResultContent[]): boolean;
  /** Whether the model was shown `text` as a user text, byte for byte. */
  modelSawUserText(text: string): boolean;
  /** Delivers `message` by `how` (every path but `signal` of a tool, which the tool itself does). */
  deliver(how: MatrixCell['delivery'], message: InputMessage): Promise<void>;
  /**
   * With provider limits: closes their key for a moment, as a provider's 429 does, so the scenario's first slices
   * wait for capacity on workflow timers. Without: nothing.
   */
  throttle(): Promise<void>;
  /** When the model was called (ms since the epoch), in order. */
  modelCalls(): number[];
  /** What the model was sent, in order: each request's system prompt (instructions, then the thread's id). */
  modelSystems(): string[];
  shutdown(): Promise<void>;
}

/** How a system's clients get live events (`thread.events()`, `thread.follow()`). */
type LiveOptions = { events: LocalEventHub } | { eventsUrl: string; eventsToken: string };

/** The limits of a `throttled` cell's worker: generous, so only the closed key holds slices back. */
export const GUARANTEE_LIMITS = { key: 'guarantees', rpm: 100_000, tpm: 100_000_000, concurrency: 64 };
/** How long the key stays closed when a scenario starts. */
export const THROTTLE_MS = 1_500;

const throttler = (cell: MatrixCell, store: ConversationStore) => async () => {
  if (cell.limits === 'throttled') await store.capacity.backoff(GUARANTEE_LIMITS.key, GUARANTEE_LIMITS, THROTTLE_MS);
};

/** The scenarios' model in this process: the same rule as the wire model; `calls` records when it was called. */
export function scriptedModel(calls: number[] = []): ScriptedModel {
  return new ScriptedModel((req) => {
    calls.push(Date.now());
    const firstUser = req.messages.find((m) => m.role === 'user');
    const last = req.messages[req.messages.length - 1]!;
    const step = scriptStep(
      firstUser?.role === 'user' ? firstUser.text : '',
      last.role === 'user'
        ? { role: 'user', text: last.text }
        : last.role === 'tool_result'
          ? { role: last.role, name: last.name, text: firstText(last.content) }
          : { role: last.role, ...('name' in last && { name: last.name }) },
    );
    return step.kind === 'call'
      ? { toolCall: { name: step.name, args: step.args } }
      : { text: step.text, ...(step.slow && SLOW) };
  });
}

/** A store whose commit of a slice holding a result or event fails once for the threads in `failOnce`. */
function failingOnce(store: ConversationStore, failOnce: Set<string>): ConversationStore {
  const failed = new Set<string>();
  return new Proxy(store, {
    get(target, key) {
      if (key === 'commit')
        return async (req: CommitRequest) => {
          const carries = req.items.some((i) => i.item.kind === 'tool_result' || i.item.kind === 'subscription_event');
          if (failOnce.has(req.threadId) && carries && !failed.has(req.threadId)) {
            failed.add(req.threadId);
            throw new Error('injected: the store failed this commit once');
          }
          return target.commit(req);
        };
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function openStore(kind: MatrixCell['store'], dir: string): Promise<{ store: ConversationStore; arg: string }> {
  if (kind === 'memory') return { store: new InMemoryConversationStore(), arg: '' };
  if (kind === 'sqlite') {
    const path = join(dir, 'conversations.sqlite');
    return { store: new SqliteConversationStore(path), arg: path };
  }
  const url = await createTestDatabase('guarantees');
  return { store: new PostgresConversationStore({ connectionString: url }), arg: url };
}

const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });

/** The delivery paths, given how this system's client, store and address are reached. */
function deliveries(
  sys: () => { client: AgentClient; store: ConversationStore; storeArg: string; address: string; taskQueue: string },
  signalNames: 'input' | 'by-kind',
  gateway: RapGateway,
  dir: string,
): GuaranteeSystem['deliver'] {
  return async (how, message) => {
    const s = sys();
    if (how === 'signal') {
      expect((await s.client.deliver(message)).delivered, 'signal delivered').toBe(true);
    } else if (how === 'ack') {
      expect(await s.client.deliver(message, { acknowledge: true })).toMatchObject({ delivered: true });
    } else if (how === 'rap') {
      if (message.content.type !== 'tool_result') throw new Error('RAP carries results and events');
      const callId = message.content.toolCallId;
      const body = message.synthetic
        ? {
            type: 'subscription_event',
            group_id: message.threadId,
            tool_call_id: callId,
            text: message.content.content.map((c) => (c.type === 'text' ? c.text : '')).join(''),
            associative: true,
          }
        : { type: 'tool_result', group_id: message.threadId, id: callId, content: message.content.content };
      const res = await fetch(gateway.callbackUrl(message.threadId, callId), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBe(200);
    } else if (how === 'cli') {
      const file = join(dir, `${randomUUID()}.json`);
      writeFileSync(file, JSON.stringify(message));
      const cli = cliRunner(() => ['--address', s.address, '--task-queue', s.taskQueue, '--store', s.storeArg], {});
      const r = await cli.run('deliver', message.threadId, '--message', file);
      expect(r, 'infinity-temporal deliver --message').toMatchObject({ code: 0 });
    } else {
      // As a user scripting the `temporal` CLI would: the input staged in the store, its reference in the payload.
      const prepared = await prepareInput(message, { store: s.store });
      const { signal, payload } = signalFor(prepared.message, { signalNames });
      const file = join(dir, `${randomUUID()}.json`);
      writeFileSync(file, JSON.stringify(payload));
      await run(findTemporalCli({ install: false }), [
        'workflow',
        'signal',
        '--address',
        s.address,
        '--workflow-id',
        message.threadId,
        '--name',
        signal.name,
        '--input-file',
        file,
      ]);
    }
  };
}

const sawIn = (model: ScriptedModel) => (content: readonly ToolResultContent[]) =>
  model.requests.some((r) =>
    r.messages.some((m) => m.role === 'tool_result' && JSON.stringify(m.content) === JSON.stringify(content)),
  );
const sawUserIn = (model: ScriptedModel) => (text: string) =>
  model.requests.some((r) => r.messages.some((m) => m.role === 'user' && m.text.replace(/^<interrupt>/, '') === text));

/**
 * In another process the model's view is its wire request: every block of the content, exactly, in one body (as a
 * string, or inside the JSON the provider adapter makes of a result with several blocks: escaped twice).
 */
const escaped = (s: string) => JSON.stringify(s).slice(1, -1);
const sawOnWire = (wire: WireModel) => (content: readonly ToolResultContent[]) =>
  wire.bodies.some((body) =>
    content.every((c) => {
      const raw = c.type === 'text' ? c.text : c.data;
      return body.includes(escaped(raw)) || body.includes(escaped(escaped(raw)));
    }),
  );
const sawUserOnWire = (wire: WireModel) => (text: string) =>
  wire.bodies.some((body) => body.includes(JSON.stringify(text).slice(1, -1)));

/** The system's own client for the defaults, else one with the path's and the scenario's thread options. */
function clientFor(
  own: AgentClient,
  make: (o: ThreadOptions) => AgentClient,
  path: MatrixCell['slicePath'],
  extra: ThreadOptions = {},
): AgentClient {
  const options: ThreadOptions = { ...(path === 'adopted' && { localSliceBudgetMs: 50 }), ...extra };
  return Object.keys(options).length === 0 ? own : make(options);
}

export async function startSystem(cell: MatrixCell): Promise<GuaranteeSystem> {
  const dir = join(inject('scratchDir'), `guarantees-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  const label = `${cell.defaults} · ${cell.store} · ${cell.signalNames}${cell.limits === 'throttled' ? ' · limits' : ''}`;
  const limits = cell.limits === 'throttled' ? { limits: GUARANTEE_LIMITS } : {};
  const failOnce = new Set<string>();
  const ref: { client?: AgentClient } = {};
  const gateway = await startRapGateway({ tokens, deliver: (m) => ref.client!.deliver(m) });
  const cleanups: (() => Promise<unknown>)[] = [() => gateway.close()];
  const shutdown = async () => {
    for (const c of cleanups.reverse()) await c().catch((e: unknown) => console.log(`${label}: ${String(e)}`));
  };
  try {
    if (cell.defaults === 'dev') return await startDev(cell, dir, label, gateway, failOnce, ref, cleanups, shutdown);
    const opened = await openStore(cell.store, dir);
    const store = failingOnce(opened.store, failOnce);
    const calls: number[] = [];
    const model = scriptedModel(calls);
    // `several`: the guarantee agents on the suite's model; the worker's limits hold for them (the same model).
    const agents = cell.agents === 'several' ? { agents: guaranteeAgents(model) } : {};
    let base: {
      client: AgentClient;
      temporal: Client;
      address: string;
      taskQueue: string;
      threadOptions?: ThreadOptions;
      /** As the system's own client starts threads (startLocalSystem's: eagerly, on its worker's connection). */
      eagerStart?: boolean;
      /** How its clients get live events: the in-process hub, or the worker's endpoint. */
      live: LiveOptions;
    };
    if (cell.defaults === 'startLocalSystem') {
      const local = await startLocalSystem({
        model,
        tools: guaranteeTools(),
        dataDir: dir,
        store,
        devServer: { ui: false },
        ...limits,
        ...agents,
        // Its default is `by-kind` (its own dev server): `input` is the one value a user must ask for.
        ...(cell.signalNames === 'input' && { signalNames: 'input' as const }),
      });
      cleanups.push(
        () => local.shutdown(),
        () => opened.store.close(),
      );
      base = {
        client: local.client,
        temporal: local.client.temporal,
        address: local.devServer.address,
        taskQueue: local.client.taskQueue,
        threadOptions: { titleSearchAttribute: true },
        eagerStart: true,
        live: { events: local.events },
      };
    } else {
      // The README's setup: a worker and a client, with no option beyond the documented ones.
      const address = inject('temporalAddress');
      const taskQueue = `guarantees-${randomUUID()}`;
      const connection = await NativeConnection.connect({ address });
      const signalNames = cell.signalNames === 'by-kind' ? { signalNames: 'by-kind' as const } : {};
      const worker = await createAgentWorker({
        connection,
        taskQueue,
        store,
        model,
        tools: guaranteeTools(),
        workflowBundle: { codePath: inject('workflowBundlePath') },
        ...signalNames,
        ...limits,
        ...agents,
        eventsEndpoint: {}, // the README's worker serves live events to clients in other processes
      });
      const running = worker.run();
      const clientConnection = await Connection.connect({ address });
      const temporal = new Client({ connection: clientConnection });
      cleanups.push(
        () => connection.close(),
        () => opened.store.close(),
        () => clientConnection.close(),
        async () => {
          await worker.shutdown();
          await running;
        },
      );
      const live = { eventsUrl: worker.eventsUrl!, eventsToken: worker.eventsToken! };
      base = {
        client: new AgentClient({ client: temporal, taskQueue, store, ...signalNames, ...live }),
        temporal,
        address,
        taskQueue,
        live,
      };
    }
    ref.client = base.client;
    const make = (threadOptions: ThreadOptions) =>
      new AgentClient({
        client: base.temporal,
        taskQueue: base.taskQueue,
        store,
        signalNames: cell.signalNames,
        threadOptions: { ...base.threadOptions, ...threadOptions },
        ...(base.eagerStart && { eagerStart: true }),
        ...base.live,
      });
    const view = () => ({
      client: base.client,
      store,
      storeArg: opened.arg,
      address: base.address,
      taskQueue: base.taskQueue,
    });
    return {
      label,
      signalNames: cell.signalNames,
      address: base.address,
      taskQueue: base.taskQueue,
      store,
      storeArg: opened.arg,
      client: (path, extra) => clientFor(base.client, make, path, extra),
      failOnce,
      modelSaw: sawIn(model),
      modelSawUserText: sawUserIn(model),
      deliver: deliveries(view, cell.signalNames, gateway, dir),
      throttle: throttler(cell, opened.store),
      modelCalls: () => calls,
      modelSystems: () => model.requests.map((r) => r.system),
      shutdown,
    };
  } catch (e) {
    await shutdown();
    throw e;
  }
}

async function startDev(
  cell: MatrixCell,
  dir: string,
  label: string,
  gateway: RapGateway,
  failOnce: Set<string>,
  ref: { client?: AgentClient },
  cleanups: (() => Promise<unknown>)[],
  shutdown: () => Promise<void>,
): Promise<GuaranteeSystem> {
  const wire = await startWireModel();
  cleanups.push(() => wire.close());
  const cli = cliRunner(() => [], {
    INFINITY_BASE_URL: wire.baseUrl,
    INFINITY_MODEL_IMAGES: '1',
  });
  const limitsFile = join(dir, 'limits.json');
  if (cell.limits === 'throttled') writeFileSync(limitsFile, JSON.stringify(GUARANTEE_LIMITS));
  const child: ChildProcess = cli.start([
    'dev',
    '--data-dir',
    dir,
    '--model',
    'openai-compatible:scripted',
    '--tools',
    // `several`: the module also exports the guarantee agents.
    join(__dirname, cell.agents === 'several' ? 'dev-agents.ts' : 'dev-tools.ts'),
    ...(cell.limits === 'throttled' ? ['--limits', limitsFile] : []),
  ]);
  cleanups.push(async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('close', r));
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let address = '';
  let storeArg = '';
  let eventsUrl = '';
  for await (const line of lines(child)) {
    const store = /^Store\s+(\S+)$/.exec(line);
    if (store) storeArg = store[1]!;
    const events = /^Live events\s+(\S+)$/.exec(line);
    if (events) eventsUrl = events[1]!;
    const m = /^export TEMPORAL_ADDRESS=(\S+)$/.exec(line);
    if (m) {
      address = m[1]!;
      break;
    }
  }
  if (!address || !eventsUrl) throw new Error(`dev did not start (or serves no live events):\n${stderr}`);
  // As `tail` on this machine does: the token `dev` keeps in its data directory.
  const live = { eventsUrl, eventsToken: readLocalEventsToken(dir)! };
  const connection = await Connection.connect({ address });
  const store = new SqliteConversationStore(storeArg);
  cleanups.push(
    () => connection.close(),
    () => store.close(),
  );
  const temporal = new Client({ connection });
  const taskQueue = 'infinity-agents';
  // As `dev`'s own client does (startLocalSystem on its own server): by kind, titles in the `Title` attribute.
  const make = (threadOptions: ThreadOptions) =>
    new AgentClient({
      client: temporal,
      taskQueue,
      store,
      signalNames: 'by-kind',
      threadOptions: { titleSearchAttribute: true, ...threadOptions },
      ...live,
    });
  const client = make({ titleSearchAttribute: true });
  ref.client = client;
  const view = () => ({ client, store, storeArg, address, taskQueue });
  return {
    label,
    signalNames: 'by-kind',
    address,
    taskQueue,
    store,
    storeArg,
    client: (path, extra) => clientFor(client, make, path, extra),
    failOnce,
    modelSaw: sawOnWire(wire),
    modelSawUserText: sawUserOnWire(wire),
    deliver: deliveries(view, 'by-kind', gateway, dir),
    throttle: throttler(cell, store),
    modelCalls: () => wire.times,
    modelSystems: () =>
      wire.requests.map((messages) => (messages[0]?.role === 'system' ? textOf(messages[0].content) : '')),
    shutdown,
  };
}
