/**
 * A fleet: one design's worker process(es) and the driver side that plays users and external tools for its agents.
 */
import { Client, Connection } from '@temporalio/client';
import { AgentClient } from '../../src/client/agent-client';
import { subscriptionEvent, toolResult } from '../../src/tools/messages';
import type { ThreadPriority } from '../../src/core/priority';
import { type BareSteps, resultSignal, userSignal } from '../baselines/workflows';
import { searchAttributes } from '../../src/workflows/definitions';
import { rootPriority } from '../../src/core/priority';
import type { WorkerToDriver } from './worker-messages';
import type { ThreadOptions } from '../../src/workflows/contract';
import { WorkerProcesses } from './worker-processes';

/**
 * `ours`: the runtime. `v01`: release 0.1's operations per turn with empty bodies (regular activities), a fixed
 * reference. `ceiling`: the current operations per turn with empty bodies (local activities). `blocking`: the
 * transcript in workflow state and a tool call as an activity that waits for its result. `bare` (parking only): a
 * workflow that parks on a signal, plus the parts of ours' start that {@link BareStart} turns on.
 */
export type Design = 'ours' | 'v01' | 'ceiling' | 'blocking' | 'bare';
export const DESIGNS: readonly Design[] = ['ours', 'v01', 'ceiling', 'blocking'];

/** The baselines' workflow per design (see `bench/baselines/workflows.ts`). */
const BASELINE_WORKFLOW: Record<Exclude<Design, 'ours'>, string> = {
  v01: 'v01Agent',
  ceiling: 'ceilingAgent',
  blocking: 'blockingAgent',
  bare: 'bareAgent',
};

/**
 * How the driver starts a `bare` agent: each field one part of what ours' `sendUserText` sends, and `steps` what its
 * first workflow task does. All off: `workflow.start` with no signal, search attribute, metadata or priority.
 */
export interface BareStart {
  /** Signal-with-start carrying the user text, as ours, instead of a plain start. */
  signalWithStart?: boolean;
  /** The `ThreadKind` search attribute at start. */
  kind?: boolean;
  /** The `AgentStatus = idle` search attribute at start. */
  status?: boolean;
  /** Memo title, static summary and static details, as ours' start request. */
  metadata?: boolean;
  /** Ours' root priority (priority key 2, the thread id as fairness key). */
  priority?: boolean;
  steps?: BareSteps;
}

export interface FleetOptions {
  design: Design;
  address: string;
  /** `ours`' conversation store: a SQLite file path or a `postgres://` URL (`openConversationStore`). */
  store: string;
  bundlePath: string;
  /** Worker processes on the fleet's task queue (`ours` only). @default 1 */
  workers?: number;
  maxCachedWorkflows: number;
  /** Activity slots of the baselines' worker (the blocking design needs one per waiting agent). */
  activitySlots: number;
  /** Thread options for `ours` (e.g. no status search attribute). */
  threadOptions?: ThreadOptions;
  /** `ours`' workflow task slots (default 100, as the baselines'). */
  workflowSlots?: number;
  /** `ours`' CPU target (decision 64). @default none */
  cpuTarget?: number;
  /** `ours`' store item cache bound in bytes. @default the store's (32 MiB) */
  itemCacheBytes?: number;
  /** `bare` only: which parts of ours' start it adds. @default none (it only parks) */
  bare?: BareStart;
  /**
   * Who starts an agent with its first text: the driver (a client in another process, as users are), or the worker
   * process's own client on the worker's connection, asking for eager start (decision 72; `ours` and plain `bare`).
   * @default 'driver'
   */
  startIn?: 'driver' | 'worker';
  /**
   * `ours` only: the worker hosts the benchmark's two agents (`bench/lib/bench-agents.ts`, issue 40), and each agent's
   * texts name the agent this returns for its id (undefined: none, the worker's default).
   */
  agentOf?: (id: string) => string | undefined;
}

/**
 * What the driver does with an agent: `turns` runs it through `turns` turns, each tool answering after `toolDelayMs`;
 * `turns-then-park` runs `turns` full turns (each tool answered at once) and parks it on the tool call of the next.
 */
type AgentMode =
  | { kind: 'turns'; turns: number; toolDelayMs: number }
  | { kind: 'turns-then-park'; turns: number }
  | { kind: 'subscribe' };

interface AgentState {
  id: string;
  mode: AgentMode;
  turn: number;
  resultSentAt?: number;
  pendingCall?: string;
  /** `ours` only: the priority the agent's thread starts with. */
  priority?: ThreadPriority;
  /** The call whose result started the agent's subscription (mode `subscribe`). */
  subscription?: string;
  done: () => void;
  parked: () => void;
}

/** Epoch milliseconds at sub-millisecond resolution: the clock the worker processes stamp their messages with. */
export const epochMs = () => performance.timeOrigin + performance.now();

export class Fleet {
  private readonly processes: WorkerProcesses;
  private readonly agents = new Map<string, AgentState>();
  private client!: Client;
  private agentClient!: AgentClient;
  readonly taskQueue: string;
  /** Tool result → next completion start, ms. */
  latencies: number[] = [];
  completions = 0;
  /** Turns ended (each agent's second completion of a turn finished). */
  turnsEnded = 0;
  /** When the last turn of any agent ended (epoch ms, the worker's clock), 0 before the first. */
  lastEndAt = 0;
  /**
   * Tool calls dispatched again after their first dispatch (a retried slice re-dispatches its committed call,
   * decision 8): counted, and otherwise ignored, as an idempotent tool would.
   */
  dispatchedAgain = 0;
  private readonly dispatched = new Set<string>();
  errors: string[] = [];
  /** Starts sent through a worker process, by agent id, until it says they were sent. */
  private readonly sending = new Map<string, (error?: string) => void>();

  constructor(readonly opts: FleetOptions) {
    this.taskQueue = `bench-${opts.design}-${Date.now()}`;
    if ((opts.workers ?? 1) !== 1 && opts.design !== 'ours')
      throw new Error(`only ours runs several worker processes, not ${opts.design}`);
    if (opts.agentOf && opts.design !== 'ours') throw new Error(`only ours hosts agents, not ${opts.design}`);
    if (opts.startIn === 'worker' && opts.design !== 'ours' && opts.design !== 'bare')
      throw new Error(`only ours and bare start their agents in the worker process, not ${opts.design}`);
    this.processes = new WorkerProcesses(opts.design, (m) => this.onMessage(m));
  }

  /** The first worker process. */
  get pid(): number | undefined {
    return this.processes.pids[0];
  }

  /** Every worker process. */
  get pids(): number[] {
    return this.processes.pids;
  }

  async start(): Promise<void> {
    const connection = await Connection.connect({ address: this.opts.address });
    this.client = new Client({ connection });
    this.agentClient = new AgentClient({
      client: this.client,
      taskQueue: this.taskQueue,
      threadOptions: this.opts.threadOptions,
    });
    await this.processes.start(this.opts.workers ?? 1, {
      DESIGN: this.opts.design,
      TEMPORAL_ADDRESS: this.opts.address,
      TASK_QUEUE: this.taskQueue,
      STORE: this.opts.store,
      BUNDLE_PATH: this.opts.bundlePath,
      MAX_CACHED: String(this.opts.maxCachedWorkflows),
      ACTIVITY_SLOTS: String(this.opts.activitySlots),
      ...(this.opts.workflowSlots !== undefined && { WORKFLOW_SLOTS: String(this.opts.workflowSlots) }),
      ...(this.opts.cpuTarget !== undefined && { CPU_TARGET: String(this.opts.cpuTarget) }),
      ...(this.opts.itemCacheBytes !== undefined && { ITEM_CACHE_BYTES: String(this.opts.itemCacheBytes) }),
      ...(this.opts.startIn === 'worker' && { START_IN_WORKER: '1' }),
      ...(this.opts.threadOptions && { THREAD_OPTIONS: JSON.stringify(this.opts.threadOptions) }),
      ...(this.opts.bare && { BARE_START: JSON.stringify(this.opts.bare) }),
      ...(this.opts.agentOf && { AGENTS: '1' }),
    });
  }

  /** A batch's message from any of the worker processes (`ready` and `gc-done` are theirs to handle). */
  private onMessage(m: WorkerToDriver): void {
    if (m.k === 'ready' || m.k === 'gc-done') return;
    if (m.k === 'sent') {
      this.sending.get(m.id)?.(m.error);
      this.sending.delete(m.id);
      return;
    }
    const a = this.agents.get(m.id);
    if (!a) return;
    if (m.k === 'start') {
      this.completions++;
      if (a.resultSentAt !== undefined) {
        this.latencies.push(m.at - a.resultSentAt);
        a.resultSentAt = undefined;
      }
    } else if (m.k === 'tool') {
      const key = `${m.id}\n${m.call}`;
      if (this.dispatched.has(key)) {
        this.dispatchedAgain++;
        return;
      }
      this.dispatched.add(key);
      a.pendingCall = m.call;
      if (a.mode.kind === 'subscribe') void this.subscribe(a);
      else if (a.mode.kind === 'turns') setTimeout(() => void this.answer(a), a.mode.toolDelayMs);
      else if (a.turn >= a.mode.turns) a.parked();
      else void this.answer(a);
    } else if (m.k === 'end') {
      this.turnsEnded++;
      this.lastEndAt = Math.max(this.lastEndAt, m.at);
      a.turn++;
      if (a.mode.kind === 'subscribe') a.done();
      else if (a.mode.kind === 'turns-then-park' || a.turn < a.mode.turns) void this.sendUser(a);
      else a.done();
    }
  }

  private fail(e: unknown): void {
    if (this.errors.length < 20) this.errors.push(e instanceof Error ? e.message : String(e));
  }

  private async sendUser(a: AgentState): Promise<void> {
    const text = `Turn ${a.turn}: is build ${a.turn + 1} green?`;
    try {
      if (this.opts.startIn === 'worker' && a.turn === 0) {
        const error = await new Promise<string | undefined>((resolve) => {
          this.sending.set(a.id, resolve);
          this.processes.sendFirst({ k: 'send', id: a.id, text, msgId: `${a.id}-u0` });
        });
        if (error !== undefined) throw new Error(error);
      } else if (this.opts.design === 'ours') {
        const agent = this.opts.agentOf?.(a.id);
        await this.agentClient.sendUserText(a.id, text, {
          id: `${a.id}-u${a.turn}`,
          ...(a.priority && { priority: a.priority }),
          ...(agent !== undefined && { agent }),
        });
      } else if (this.opts.design === 'bare') {
        await this.startBare(a, text);
      } else {
        const workflow = BASELINE_WORKFLOW[this.opts.design];
        // The workflow's turns: a parking agent's last turn is the one it parks in.
        if (a.mode.kind === 'subscribe') throw new Error('only ours subscribes');
        const turns = a.mode.kind === 'turns' ? a.mode.turns : a.mode.turns + 1;
        // The empty-bodied baselines write the status attribute exactly when ours does.
        const statusUpserts =
          this.opts.design !== 'blocking' && this.opts.threadOptions?.statusSearchAttribute !== false;
        await this.client.workflow.signalWithStart(workflow, {
          workflowId: a.id,
          taskQueue: this.taskQueue,
          args: [a.id, turns, statusUpserts],
          signal: userSignal,
          signalArgs: [text],
        });
      }
    } catch (e) {
      this.fail(e);
    }
  }

  /** Starts a `bare` agent with the parts of ours' start its {@link BareStart} turns on. */
  private async startBare(a: AgentState, text: string): Promise<void> {
    await startBareAgent(this.client, this.taskQueue, this.opts.bare ?? {}, a.id, text);
  }

  /** Delivers the tool result, as the external system would. */
  async answer(a: AgentState): Promise<void> {
    const call = a.pendingCall;
    if (!call) return;
    a.pendingCall = undefined;
    a.resultSentAt = epochMs();
    try {
      if (this.opts.design === 'ours') {
        await this.agentClient.deliver(
          toolResult({ threadId: a.id, toolCallId: call }, `Build status for ${call}: green`),
        );
      } else if (this.opts.design === 'blocking') {
        this.processes.sendFirst({ k: 'result', id: a.id, call });
      } else {
        await this.client.workflow.getHandle(a.id).signal(resultSignal, call);
      }
    } catch (e) {
      this.fail(e);
    }
  }

  /** Answers the agent's tool call with the start of a subscription, as a tool that watches something would. */
  private async subscribe(a: AgentState): Promise<void> {
    a.subscription = a.pendingCall;
    a.pendingCall = undefined;
    try {
      await this.agentClient.deliver(
        toolResult({ threadId: a.id, toolCallId: a.subscription! }, 'Watching the pipeline.', { subscription: true }),
      );
    } catch (e) {
      this.fail(e);
    }
  }

  /**
   * `ours` only: starts agents whose tool call is answered with a subscription; resolves when each has ended the turn
   * that started it. Their events are then sent with {@link event}.
   */
  async subscribeAll(ids: string[], priority?: ThreadPriority, concurrency = 50): Promise<void> {
    const done: Promise<void>[] = [];
    const states = ids.map((id) => {
      let resolve!: () => void;
      done.push(new Promise<void>((r) => (resolve = r)));
      const a: AgentState = {
        id,
        mode: { kind: 'subscribe' },
        turn: 0,
        done: resolve,
        parked: () => {},
        ...(priority && { priority }),
      };
      this.agents.set(id, a);
      return a;
    });
    await pool(states, concurrency, (a) => this.sendUser(a));
    await Promise.all(done);
  }

  /** An event of a subscribed agent's subscription, inlined into its thread (associative). */
  async event(id: string, text: string): Promise<void> {
    const a = this.agents.get(id);
    if (!a?.subscription) throw new Error(`agent ${id} has no subscription`);
    try {
      await this.agentClient.deliver(
        subscriptionEvent({ threadId: id, toolCallId: a.subscription }, text, { associative: true }),
      );
    } catch (e) {
      this.fail(e);
    }
  }

  /** Runs agents through `turns` turns each; resolves when all are done. */
  async runTurns(
    ids: string[],
    turns: number,
    toolDelayMs: number,
    concurrency = 200,
    staggerMs = 0,
    priority?: ThreadPriority,
  ): Promise<void> {
    const done: Promise<void>[] = [];
    const starts: AgentState[] = [];
    for (const id of ids) {
      let resolveDone!: () => void;
      done.push(new Promise<void>((r) => (resolveDone = r)));
      const a: AgentState = {
        id,
        mode: { kind: 'turns', turns, toolDelayMs },
        turn: 0,
        done: resolveDone,
        parked: () => {},
        ...(priority && { priority }),
      };
      this.agents.set(id, a);
      starts.push(a);
    }
    if (staggerMs > 0) {
      // Spread the first messages over the window, as independent users would.
      for (const a of starts) setTimeout(() => void this.sendUser(a), Math.random() * staggerMs);
    } else {
      await pool(starts, concurrency, (a) => this.sendUser(a));
    }
    await Promise.all(done);
  }

  /**
   * Runs agents that {@link runTurns} already ran through `turns` more turns each (each tool answered after
   * `toolDelayMs`); their turn counters go on, so every message keeps a new id. Resolves when all are done.
   */
  async moreTurns(ids: string[], turns: number, toolDelayMs = 0, concurrency = 200): Promise<void> {
    const done: Promise<void>[] = [];
    const states = ids.map((id) => {
      const a = this.agents.get(id);
      if (!a) throw new Error(`agent ${id} has run no turns yet`);
      done.push(new Promise<void>((r) => (a.done = r)));
      a.mode = { kind: 'turns', turns: a.turn + turns, toolDelayMs };
      return a;
    });
    await pool(states, concurrency, (a) => this.sendUser(a));
    await Promise.all(done);
  }

  /** Starts agents that call a tool nobody answers; resolves when all are parked on it. */
  park(ids: string[], concurrency = 200, onProgress?: (n: number) => void): Promise<void> {
    return this.parkAfter(ids, 0, concurrency, onProgress);
  }

  /**
   * Runs agents through `turns` full turns (each tool answered at once), then parks them on the tool call of the next
   * turn, which nobody answers; resolves when all are parked. With `turns` 0, `concurrency` bounds the first messages
   * in flight (an agent is busy for one completion); otherwise it bounds the agents busy with their turns, so that
   * they do not all contend for the worker's workflow cache at once.
   */
  async parkAfter(ids: string[], turns: number, concurrency = 200, onProgress?: (n: number) => void): Promise<void> {
    let parked = 0;
    const states: { a: AgentState; parked: Promise<void> }[] = [];
    for (const id of ids) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      const a: AgentState = {
        id,
        mode: { kind: 'turns-then-park', turns },
        turn: 0,
        done: () => {},
        parked: () => {
          parked++;
          onProgress?.(parked);
          resolve();
        },
      };
      this.agents.set(id, a);
      states.push({ a, parked: promise });
    }
    await pool(states, concurrency, async (s) => {
      await this.sendUser(s.a);
      if (turns > 0) await s.parked;
    });
    await Promise.all(states.map((s) => s.parked));
  }

  /** Answers the parked agents' tools and waits until each finished its turn. */
  async release(ids: string[], concurrency = 200): Promise<void> {
    const done: Promise<void>[] = [];
    const states = ids.map((id) => this.agents.get(id)!);
    for (const a of states) {
      done.push(new Promise<void>((r) => (a.done = r)));
      a.mode = { kind: 'turns', turns: 1, toolDelayMs: 0 };
    }
    await pool(states, concurrency, (a) => this.answer(a));
    await Promise.all(done);
  }

  get temporal(): Client {
    return this.client;
  }

  /** Asks every worker to collect garbage, so resident memory reflects what it still holds. */
  gc(): Promise<void> {
    return this.processes.gc();
  }

  resetCounters(): void {
    this.latencies = [];
    this.completions = 0;
    this.turnsEnded = 0;
  }

  async stop(): Promise<void> {
    await this.processes.stop();
    await this.client?.connection.close();
  }
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: readonly T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

/**
 * Starts a `bare` agent with the parts of ours' start that `b` turns on; `eager` asks for eager start (a client on a
 * worker's connection), which a signal-with-start cannot: the text then travels in no signal, as ours' eager start
 * carries it in its input.
 */
export async function startBareAgent(
  client: Client,
  taskQueue: string,
  b: BareStart,
  id: string,
  text: string,
  eager = false,
): Promise<void> {
  const title = text.slice(0, 80);
  const options = {
    workflowId: id,
    taskQueue,
    args: [id, b.steps ?? {}] as [string, BareSteps],
    typedSearchAttributes: [
      ...(b.kind ? [{ key: searchAttributes.ThreadKind, value: 'root' }] : []),
      ...(b.status ? [{ key: searchAttributes.AgentStatus, value: 'idle' }] : []),
    ],
    ...(b.metadata && {
      memo: { title },
      staticSummary: title,
      staticDetails: `root thread \`${id}\`: its whole conversation with \`infinity-temporal history ${id} --full\``,
    }),
    ...(b.priority && { priority: rootPriority(id) }),
  };
  if (eager) await client.workflow.start('bareAgent', { ...options, requestEagerStart: true });
  else if (b.signalWithStart)
    await client.workflow.signalWithStart('bareAgent', { ...options, signal: userSignal, signalArgs: [text] });
  else await client.workflow.start('bareAgent', options);
}
