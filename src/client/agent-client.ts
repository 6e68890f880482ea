/**
 * `AgentClient`: start threads and send them input; a `ThreadHandle` (thread-handle.ts) watches and inspects one.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { InputMessage } from '../core/types';
import type { ThreadPriority } from '../core/priority';
import type { ConversationStore } from '../store/conversation-store';
import { userText } from '../tools/messages';
import { inputLimitViolation } from '../core/validate';
import type { LocalEventHub } from '../events/event-hub';
import type { ThreadOptions } from '../workflows/contract';
import { deliverInput, type DeliveryResult, prepareInput } from '../inbox/deliver';
import { discardPrepared, type InputLimits } from '../inbox/staging';
import { InvalidInputError } from '../inbox/errors';
import { deliverAcknowledged } from '../inbox/ack-delivery';
import { typedUnavailable } from '../inbox/unavailable';
import { listThreads, type ThreadFilter, type ThreadSummary } from './listing';
import { forkThread, type ForkThreadOptions } from './fork';
import { rewindThread, type RewindResult, type RewindThreadOptions } from './rewind';
import { migrateThreads, type MigrateOptions, type MigrateReport } from './migrate';
import { setAgent } from './set-agent';
import { ThreadHandle } from './thread-handle';
import { ThreadStarts } from './thread-start';
import { type BudgetTarget, budgetStates, setBudget, type SetBudgetResult } from './budgets';
import type { Budget, BudgetState } from '../core/budget';

/** Options of {@link AgentClient}. Only `client` and `taskQueue` are required. */
export interface AgentClientOptions {
  /** A Temporal client connected to the cluster the workers serve. */
  client: Client;
  /** The task queue the workers poll; threads this client starts run on it. */
  taskQueue: string;
  /**
   * The store the workers write to; needed for {@link ThreadHandle.history}, and where inputs over 128 KiB are staged
   * (opened writable, then) so that only a reference goes through Temporal.
   * @default none (no history; inputs up to 256 KiB)
   */
  store?: ConversationStore;
  /** The event hub of a worker in this process, for {@link ThreadHandle.events}. @default none */
  events?: LocalEventHub;
  /**
   * Or the events endpoints of the workers (`AgentWorker.eventsUrl`), for clients in other processes. With several
   * workers on a task queue, list them all: a thread's next slice may run on any of them.
   * @default none
   */
  eventsUrl?: string | string[];
  /**
   * Bearer token of that endpoint (`AgentWorker.eventsToken`), or the capability of the one thread this client reads
   * (`eventsCapability(token, threadId)`).
   * @default none
   */
  eventsToken?: string;
  /**
   * Options of the threads this client starts (continue-as-new bounds, `titleSearchAttribute`). With a payload codec in
   * `client`'s data converter, `titleSearchAttribute` is always off: search attributes are stored in plaintext.
   * @default none
   */
  threadOptions?: ThreadOptions;
  /**
   * Upper bound of one input, serialized: default 32 MiB with a `store` (larger inputs are staged in it), 256 KiB
   * without (every input travels whole in its signal). Over it: `PayloadTooLargeError`.
   * @default 32 MiB with a store, 256 KiB without
   */
  maxInputBytes?: number;
  /**
   * Task priority of the root threads this client starts, field by field under what `startThread` or `sendUserText`
   * give. Unset fields: priority key 2 (before children and event handlers, which run at 4), the thread id as fairness
   * key (an agent tree shares one fair share of the task queue), weight 1. See docs/operations.md.
   * @default { priorityKey: 2, fairnessKey: <thread id>, fairnessWeight: 1 }
   */
  priority?: ThreadPriority;
  /**
   * `by-kind`: send each input by its kind's signal (`user_text`, `tool_result`, `event`, `report`, `control`) with
   * its readable part first, so a thread's event history reads at a glance; threads this client starts send their
   * reports so too (decision 62). Turn it on only once every worker runs release 0.5 or later: an older worker has no
   * handler for those names and leaves the input unread (it is read, out of turn, once a newer worker replays the
   * thread). `infinity-temporal dev` and `startLocalSystem` run one build and turn it on.
   * @default 'input'
   */
  signalNames?: 'input' | 'by-kind';
  /**
   * Start new threads eagerly (decision 72): the first user text goes in the start request instead of a signal with
   * it, and the server hands the thread's first workflow task straight back to a worker in this process, skipping the
   * task queue (its priority and fairness included). Needs a Temporal client on the same `NativeConnection` as a
   * worker of {@link AgentClientOptions.taskQueue}; `startLocalSystem`'s client has it on (`infinity-temporal send`
   * runs in a process of its own, so it starts by signal). When no
   * workflow slot is free there, the server queues the task as usual. A text to a thread this client has not seen
   * costs one start request first; to one that exists, that request fails and the text is signalled as without the
   * option. Every worker of the task queue must run release 0.9 or later: older code ignores the start's input.
   * @default false
   */
  eagerStart?: boolean;
  /**
   * The agents threads may name (issue 40): a start, send, fork or `setAgent` naming another is an
   * {@link InvalidInputError} before anything is sent. `startLocalSystem` and `infinity-temporal dev` pass their
   * worker's. Without it any valid name is sent, and a thread whose agent no worker defines waits with status
   * `agent_unavailable`.
   * @default none (names checked for form only)
   */
  agents?: readonly string[];
}

/** Options of {@link AgentClient.sendUserText} and {@link ThreadHandle.sendUserText}. */
export interface SendUserTextOptions {
  /** Message id: pass one to make a resend idempotent. @default a random UUID */
  id?: string;
  /** Priority of the thread if this text creates it; a running thread keeps the priority it started with. */
  priority?: ThreadPriority;
  /**
   * The tenant of the thread if this text creates it (see {@link StartThreadOptions.tenant}); a running thread keeps
   * its own.
   * @default the thread id
   */
  tenant?: string;
  /** The agent of the thread if this text creates it (see {@link StartThreadOptions.agent}); a running thread keeps its own. */
  agent?: string;
}

/** Options of {@link AgentClient.startThread}. All optional. */
export interface StartThreadOptions {
  /** The thread id (= workflow id). Starting an existing thread returns it. @default a random UUID */
  threadId?: string;
  /**
   * Root metadata (e.g. `user_id`, which remote tools receive); later inputs with `metadata` replace it.
   * @default none
   */
  metadata?: Record<string, unknown>;
  /**
   * Task priority and fairness (see {@link AgentClientOptions.priority}); set when the thread starts.
   * @default the client's `priority`
   */
  priority?: ThreadPriority;
  /**
   * What the thread is about: its memo title and static summary (the Temporal UI shows it in lists and the
   * relationships view).
   * @default none: the first user text titles the thread
   */
  title?: string;
  /**
   * The tenant whose budget this thread's tree bills to (issue 27 §1); its children inherit it. Set at start only.
   * @default the root thread id
   */
  tenant?: string;
  /**
   * The agent the thread runs (issue 40): its instructions, models and tools, from the workers' `agents` (or their
   * `resolveAgent`). Kept in the thread's state, memo and `AgentName` search attribute; `setAgent` moves it.
   * @default the workers' default agent
   */
  agent?: string;
  /** A budget for this thread (its own usage), written to the store before the thread starts. @default none */
  budget?: Budget;
  /** A budget for this thread's agent tree (its usage and its children's). @default none */
  treeBudget?: Budget;
}

export type { ThreadFilter, ThreadSummary } from './listing';

/** Options of {@link ThreadHandle.waitForIdle}. */
export interface WaitForIdleOptions {
  /** Also wait until no non-passive tool call is pending. @default false */
  settled?: boolean;
  /** How long to wait before {@link ThreadTimeoutError} (the wait is then cancelled). @default 60000 (60 s) */
  timeoutMs?: number;
}

/** Options of {@link AgentClient.deliver} and {@link ThreadHandle.deliver}. */
export interface DeliverOptions {
  /**
   * Wait for the thread to take the input and report `accepted` or `dropped` with the reason.
   * @default false
   */
  acknowledge?: boolean;
}

/**
 * Starts threads and sends them input, over a Temporal {@link Client}; {@link AgentClient.thread} gives a
 * {@link ThreadHandle} that watches and inspects one. Any number of clients, in any processes, may talk to the workers
 * of one task queue.
 *
 * @example
 * ```ts
 * import { Client, Connection } from '@temporalio/client';
 * import { AgentClient, SqliteConversationStore } from 'infinity-temporal';
 *
 * const client = new AgentClient({
 *   client: new Client({ connection: await Connection.connect({ address: 'localhost:7233' }) }),
 *   taskQueue: 'agents',
 *   store: new SqliteConversationStore('conversations.sqlite'), // the workers' store: for history() and large inputs
 * });
 * const thread = client.thread('demo');
 * await thread.sendUserText('Is build 42 green yet?'); // starts the thread
 * await thread.waitForIdle();
 * ```
 */
export class AgentClient {
  /** The Temporal client it was given (`options.client`). */
  readonly temporal: Client;
  /** The task queue its threads run on. */
  readonly taskQueue: string;
  private readonly options: AgentClientOptions;

  /** Everything about starting a thread (thread-start.ts): its start options, eager start, signal-with-start. */
  private readonly starts: ThreadStarts;

  constructor(options: AgentClientOptions) {
    this.options = options;
    this.temporal = options.client;
    this.taskQueue = options.taskQueue;
    this.starts = new ThreadStarts(options);
  }

  /**
   * Starts a root thread (idempotent: an existing running thread is returned as is). Metadata beyond the input shape
   * limits (`DEFAULT_INPUT_LIMITS`: nesting, width, string length) is an {@link InvalidInputError}. A thread needs no
   * explicit start: {@link AgentClient.sendUserText} creates its thread too.
   *
   * @example
   * ```ts
   * const thread = await client.startThread({
   *   threadId: 'ticket-42',
   *   title: 'Ticket 42: the build is red',
   *   metadata: { user_id: 'u7' }, // remote tools receive it
   * });
   * await thread.sendUserText('Summarize the ticket');
   * ```
   */
  async startThread(options: StartThreadOptions = {}): Promise<ThreadHandle> {
    const threadId = options.threadId ?? randomUUID();
    // Before the start request serializes it: a deep metadata object would overflow the stack there.
    const shape = options.metadata === undefined ? undefined : inputLimitViolation({ metadata: options.metadata });
    if (shape) throw new InvalidInputError(shape);
    const start = this.starts.options(threadId, options.priority, options.title, options.agent);
    if (options.metadata) start.args = [{ ...start.args[0], metadata: options.metadata }];
    if (options.tenant !== undefined) start.args = [{ ...start.args[0], tenant: options.tenant }];
    // In the store before the thread can run a slice: its first slice is checked against them.
    if (options.budget) await this.setBudget({ thread: threadId }, options.budget);
    if (options.treeBudget) await this.setBudget({ tree: threadId }, options.treeBudget);
    await this.starts.start(start);
    return this.thread(threadId);
  }

  /**
   * Sets (`null`: removes) the budget of a thread, an agent tree (by root thread id) or a tenant, in the conversation
   * store every worker reads, and wakes the threads waiting over budget under it: each checks again and resumes if no
   * budget of its own is reached. Needs `store`.
   *
   * @example
   * ```ts
   * await client.setBudget({ tree: rootThreadId }, { usd: 5 }); // the thread and all its children: 5 USD
   * await client.setBudget({ tenant: 'acme' }, { totalTokens: 2_000_000 });
   * await client.setBudget({ thread: threadId }, null); // removes the thread's own budget
   * ```
   */
  async setBudget(target: BudgetTarget, budget: Budget | null): Promise<SetBudgetResult> {
    return setBudget(this.temporal, this.requireStore('setBudget'), target, budget);
  }

  /** Limits (if set) and spend so far of each target, in order. Needs `store`. */
  budgets(...targets: BudgetTarget[]): Promise<BudgetState[]> {
    return budgetStates(this.requireStore('budgets'), targets);
  }

  /**
   * As {@link budgets}, each with its spend per model that served its slices (`byModel`, sorted by model; a slice
   * routed to a second model adds to both). Needs `store`.
   */
  budgetsByModel(...targets: BudgetTarget[]): Promise<BudgetState[]> {
    return budgetStates(this.requireStore('budgetsByModel'), targets, { byModel: true });
  }

  private requireStore(what: string): ConversationStore {
    if (!this.options.store) throw new Error(`${what}() needs the conversation store: pass \`store\` to AgentClient`);
    return this.options.store;
  }

  /**
   * A handle to a thread; makes no call, so the thread need not exist yet ({@link ThreadHandle.sendUserText} creates
   * it).
   *
   * @example
   * ```ts
   * const thread = client.thread('demo');
   * console.log((await thread.status()).status);
   * ```
   */
  thread(threadId: string): ThreadHandle {
    return new ThreadHandle(this, threadId, this.options);
  }

  /**
   * Forks a thread (issue 28 §1): a new root thread whose history is `source`'s up to `options.at`, shared in the store
   * rather than copied, and that goes on independently. See {@link ForkThreadOptions} for what it takes at the point.
   * Needs `store`. Throws {@link ThreadNotFoundError} for a source the store does not know, {@link InvalidInputError}
   * for a point outside its history or a thread id already in use by another thread.
   *
   * @example
   * ```ts
   * const fork = await client.forkThread('demo', { at: 'now', input: 'Try the other approach instead' });
   * await fork.waitForIdle();
   * ```
   */
  forkThread(source: string, options: ForkThreadOptions): Promise<ThreadHandle> {
    const deps = { client: this, store: this.options.store, limits: this.limits };
    return forkThread(
      {
        ...deps,
        start: (id, priority, title, agent) => this.starts.options(id, priority, title, agent),
        agentName: this.starts.agentName,
      },
      source,
      options,
    );
  }

  /**
   * Rewinds a thread (issue 28 §2): it continues from its first `options.to` own items as if what came after never
   * happened for the model. Nothing is deleted: the items after the point stay readable as an archived branch
   * (`thread.history({ branch })`). The calls made after the point are forgotten: the pending one is cancelled (its tool
   * told), their subscriptions end, their children are cancelled, and inputs that arrive for them later are dropped as
   * `rewound`. Taken at the thread's next pause between slices: a running slice commits first (and is archived too);
   * inputs that arrive meanwhile are kept and taken after the rewind. Needs `store` and every worker on release 0.8 or
   * later. Throws {@link ThreadNotFoundError}, {@link InvalidInputError} (a point outside `0..length-1` or inside an
   * archived branch), {@link ThreadClosedError}.
   *
   * @example
   * ```ts
   * const { branch } = await client.rewindThread('demo', { to: 'slice-1' });
   * await client.thread('demo').sendUserText('Let us try that again, differently');
   * const archived = await client.thread('demo').history({ branch }); // what the rewind took back
   * ```
   */
  rewindThread(threadId: string, options: RewindThreadOptions): Promise<RewindResult> {
    return rewindThread(this, this.options.store, threadId, options);
  }

  /**
   * Moves this task queue's running threads whose current run started before `options.before` (default: now) onto
   * new runs on the release its workers now run (a continue-as-new with all their state, at each thread's next pause
   * between slices). Run it after every worker runs a new release, before the next one drops the rules of the
   * threads' release (docs/upgrading.md, "Moving threads forward"). Bounded, resumable with the same `before`, safe
   * while threads work.
   *
   * @example
   * ```ts
   * const report = await client.migrateThreads({ concurrency: 16 });
   * console.log(`${report.moved} moved, ${report.notMoved} not moved (resume with before=${report.before})`);
   * ```
   */
  /**
   * Moves a thread to another agent (issue 40): its next slice runs that agent's instructions, models and tools; a
   * thread waiting because its agent is gone (status `agent_unavailable`) goes on at once. Its history stays as it is.
   * Needs every worker on release 0.13 or later. Throws {@link InvalidInputError} for a name the client's `agents` do
   * not list, {@link ThreadNotFoundError} / {@link ThreadClosedError} for a thread that is not running.
   *
   * @example
   * ```ts
   * await client.setAgent('ticket-42', 'reviewer');
   * ```
   */
  async setAgent(threadId: string, agent: string): Promise<void> {
    this.starts.checkAgent(agent);
    await setAgent(this.temporal, threadId, agent);
  }

  migrateThreads(options: MigrateOptions = {}): Promise<MigrateReport> {
    return migrateThreads(this.temporal, this.taskQueue, options);
  }

  /**
   * Threads matching a filter, from Temporal's visibility store (eventually consistent: a change shows up within
   * moments, not at once).
   */
  listThreads(filter: ThreadFilter = {}): AsyncGenerator<ThreadSummary> {
    return listThreads(this.temporal, this.taskQueue, filter);
  }

  /**
   * Delivers any input (tool result, event, ...) to the thread it names. Never creates a thread. By signal by default;
   * with `acknowledge` the result says whether the thread took the input or dropped it and why (an update: it waits
   * for a worker to take the input into a batch, and costs one more history event).
   *
   * @example
   * ```ts
   * import { toolResult } from 'infinity-temporal';
   *
   * // answer the call the thread waits on (as `infinity-temporal deliver demo --call <id>` does)
   * const { pendingCall } = await client.thread('demo').status();
   * if (pendingCall) {
   *   const result = toolResult({ threadId: 'demo', toolCallId: pendingCall.id }, 'Build 42: green');
   *   const r = await client.deliver(result, { acknowledge: true });
   *   if (!r.delivered) console.log(`dropped: ${r.reason}`); // e.g. 'wrong_call', 'duplicate'
   * }
   * ```
   */
  deliver(message: InputMessage, options: DeliverOptions = {}): Promise<DeliveryResult> {
    return typedUnavailable(() =>
      options.acknowledge
        ? deliverAcknowledged(this.temporal, message, this.limits)
        : deliverInput(this.temporal, message, this.limits, { signalNames: this.options.signalNames ?? 'input' }),
    );
  }

  private get limits(): InputLimits {
    return {
      ...(this.options.store && { store: this.options.store }),
      ...(this.options.maxInputBytes !== undefined && { maxBytes: this.options.maxInputBytes }),
    };
  }

  /**
   * Sends a user's text to a thread, creating the thread when it does not exist (docs/semantics.md §1); returns the
   * message id. The third argument is the message id (pass one to make a resend idempotent) or
   * {@link SendUserTextOptions}. Throws {@link ThreadClosedError} for a closed thread.
   *
   * @example
   * ```ts
   * await client.sendUserText('demo', 'Is build 42 green yet?');
   * await client.sendUserText('demo', 'And build 43?', { id: 'msg-2', priority: { priorityKey: 1 } });
   * ```
   */
  async sendUserText(threadId: string, text: string, idOrOptions: string | SendUserTextOptions = {}): Promise<string> {
    const {
      id = randomUUID(),
      priority,
      tenant,
      agent,
    } = typeof idOrOptions === 'string' ? { id: idOrOptions } : idOrOptions;
    if (agent !== undefined) this.starts.checkAgent(agent);
    const prepared = await prepareInput(userText(threadId, text, id), this.limits);
    try {
      await this.starts.sendCreating(threadId, prepared.message, { priority, tenant, title: text, agent });
    } catch (e) {
      await discardPrepared(prepared, this.options.store);
      throw e;
    }
    return id;
  }
}
