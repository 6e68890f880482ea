/**
 * The thread workflow's start contract: its arguments, its options, and the state a run carries to the next across
 * continue-as-new. What clients build to start a thread, and what the workflow restores its state from (state.ts).
 * Types and constants only: no runtime code, so the client side imports this instead of the workflow's state.
 */
import type { BudgetExceeded } from '../core/budget';
import type { BudgetUpdate, SpawnPoint } from '../core/slice-protocol';
import type {
  DroppedInput,
  DropReason,
  ForkPoint,
  InputMessage,
  PendingCall,
  PendingPrompt,
  SetAsideBatch,
  StoredItem,
  ThreadKind,
  TokenUsage,
} from '../core/types';

/** Tuning of a thread's slices; set by the client that starts threads, inherited by children. */
export interface ThreadOptions {
  /** Heartbeat timeout of a slice: how fast a dead worker is noticed. @default 4000 (4 s) */
  sliceHeartbeatTimeoutMs?: number;
  /** Upper bound of one slice. @default 1800000 (30 min) */
  sliceTimeoutMs?: number;
  /** Attempts of one slice before the thread reports an error and waits for new input. @default 10 */
  sliceMaxAttempts?: number;
  /**
   * Input and call ids a run hands to the next, for telling a second delivery from a first.
   * @default 4096
   */
  dedupWindow?: number;
  /**
   * Keep the `AgentStatus` search attribute current. Each change is a history event and a visibility write, two per
   * tool round trip; turn it off when threads are never listed by status.
   * @default true
   */
  statusSearchAttribute?: boolean;
  /**
   * History events after which a run continues-as-new at the next pause between slices, even with inputs queued
   * (Temporal's own suggestion comes later; a short run replays fast when a flood evicts it from the worker's cache).
   * @default 2000
   */
  maxRunEvents?: number;
  /**
   * How long the first slice of a workflow task runs as a local activity (inside the task: one history event, no
   * second task) before a regular activity on the same worker adopts it, so a user text can interrupt it. Its batch is
   * the queue's first input only, so every attempt of a failed task asks for the same slice (decision 50). A user
   * text that arrives within the budget waits for it. 0: every slice is a regular activity, as in release 0.2.
   * @default 500
   */
  localSliceBudgetMs?: number;
  /**
   * Write the thread's title into the `Title` search attribute (Text) too, so the Temporal UI can list it as a column:
   * at start, or once when the first user text titles the thread (one history event and visibility write then). The
   * server must have `Title` registered, or the write fails the thread's workflow task: `infinity-temporal dev` and
   * `startLocalSystem` register it and turn this on (decision 62).
   * @default false
   */
  titleSearchAttribute?: boolean;
  /**
   * `by-kind`: reports and parent messages this thread sends go by the `report` signal instead of `input`, as clients
   * configured so send theirs by kind (decision 62). Only once every worker runs release 0.5 or later: an older one
   * has no handler for those names and would leave such an input unread.
   * @default 'input'
   */
  signalNames?: 'input' | 'by-kind';
  /**
   * `'0.5'` (decision 66): the thread's runs do not ask `infinity-v0.11` (decision 79). Since release 0.13 every rule of
   * 0.2 to 0.10 holds for every run without asking (decision 85), so that is all the option does: such a run records
   * no patch marker on its common path and no `TemporalChangeVersion` upsert (two history events and a visibility
   * write fewer per run than without it). Children and continue-as-new runs inherit it. A thread started with it under
   * 0.11 or 0.12 asked 0.6 to 0.10 on their paths, and its markers still match (test/patch-option.test.ts). The cost
   * is a rollback: 0.11 and 0.12 workers ask 0.6 to 0.10 on those paths for such a thread, so a run that this release
   * took through one of them (several inputs in one local slice, a refusal for budget or capacity, acknowledged
   * deliveries handed to the next run, a rewind, a cancel with children) does not replay on them. Without the option a
   * run asks `infinity-v0.11` once, before its first slice, and can go back to a 0.11 or 0.12 worker.
   * @default none (the run asks `infinity-v0.11`)
   */
  baseRelease?: '0.5';
}

/**
 * How a spawned thread starts: the call it must answer first, and what it receives. A fork (`AgentClient.forkThread`)
 * starts from one too: the source's call pending at the fork point, or none (null) when the fork answers it itself.
 */
export interface ThreadSeed {
  pendingCall: PendingCall | null;
  /** Items committed by the first slice before the first input (an event child's synthetic spawn). */
  prefix: StoredItem[];
  inbox: InputMessage[];
  /** Calls of the parent this thread may receive messages for (its own spawn call). */
  eventTargets: [string, string][];
}

export interface ThreadWorkflowArgs {
  threadId: string;
  kind: ThreadKind;
  options?: ThreadOptions;
  /** For spawned threads: where they attach to the parent (which `parentThreadId` names). */
  spawn?: SpawnPoint;
  /** For spawned threads and forks, first run only. */
  seed?: ThreadSeed;
  /** A fork: the thread and point its history starts from (its `status()` and current details name them). */
  forkedFrom?: ForkPoint;
  /** The end user of the thread tree (the root's metadata `user_id`), handed down to children for remote tools. */
  userId?: string;
  /** Root metadata given at start (`startThread({ metadata })`). */
  metadata?: Record<string, unknown>;
  /** The tree's tenant, for budgets (issue 27 §1): set at the root's start, handed down to children. */
  tenant?: string;
  /**
   * The thread's agent (issue 40): its slices run with that definition's instructions, model and tools. Absent: the
   * worker's default agent. A child has its parent's unless `spawn_thread` named another; a continue-as-new carries the
   * current one (a `set_agent` may have changed it). Release 0.13.
   */
  agent?: string;
  /**
   * The input a client started this thread with instead of signalling it (eager start, decision 72), as the payload of
   * the signal {@link ThreadWorkflowArgs.firstInputSignal} names: the thread takes it as that signal would, with the
   * same checks, at the point where the first task takes a signal sent with the start. First run only.
   */
  firstInput?: unknown;
  /** The signal `firstInput` stands for: `input`, or a kind's (`user_text`, ...). @default 'input' */
  firstInputSignal?: string;
  /** Set by continue-as-new only. */
  carried?: CarriedState;
}

/** A pending `sleep`/`sleep_until`: wakes the thread with `text` as the call's result. */
export interface SleepTimer {
  callId: string;
  wakeAtMs: number;
  text: string;
}

/**
 * Version of {@link CarriedState} written by this code. 1 (absent): release 0.1. 2: adds `blocked`, `failed` and
 * `setAside`. 3: adds `recentDrops`. 4: adds `overBudget` and `budgetUpdates`. 5: adds `rewound`. Readers accept every version up to theirs and ignore fields they do not know, so a run continued by
 * older code during a rolling deploy loses only what that code cannot show (docs/upgrading.md).
 */
export const CARRIED_STATE_VERSION = 5;

/** Everything a new run needs from the previous one: small, no conversation text except queued inputs. */
export interface CarriedState {
  /** Absent in state written by release 0.1. */
  version?: number;
  length: number;
  slices: number;
  closed: boolean;
  pendingCall: PendingCall | null;
  processedInputIds: string[];
  processedToolCalls: string[];
  subscriptions: [string, string][];
  eventTargets: [string, string][];
  children: [string, string][];
  deferred: InputMessage[];
  timers: SleepTimer[];
  metadata?: Record<string, unknown>;
  inbox: InputMessage[];
  prefix: StoredItem[];
  carry: StoredItem[];
  dropped: Partial<Record<DropReason, number>>;
  lastUsage?: TokenUsage;
  usage?: TokenUsage;
  compaction?: CompactionState;
  prompts?: (PendingPrompt & { toolCallId: string })[];
  lastText?: string;
  lastError?: string;
  runs: number;
  /** v2: the last slice failed for good and waits for new input before its items are retried. */
  blocked?: boolean;
  /** v2: the last slice failed for good (status `failed`). */
  failed?: boolean;
  /** v2: recent batches set aside. */
  setAside?: SetAsideBatch[];
  /** v3: the last few inputs dropped, for the `drops` query and the UI's current details. */
  recentDrops?: DroppedInput[];
  /** v4: the thread waits for a budget raise (status `over_budget`). */
  overBudget?: BudgetExceeded;
  /** v4: limits `budget` signals set that no slice has applied yet. */
  budgetUpdates?: BudgetUpdate[];
  /** 0.7, only when set: acknowledged deliveries Temporal may hand the next run again (see {@link HandedOverAck}). */
  acks?: HandedOverAck[];
  /** v5, only when set: calls a rewind archived, whose late inputs are dropped as `rewound` (issue 28 §2). */
  rewound?: string[];
}

/**
 * An input a `deliver` update delivered, handed to the next run: `[input id, "<update key>[ <answer>]"]`. Temporal may
 * deliver an update again to a run that a continue-as-new started, under the same update id, even one an earlier run
 * answered (the retries of a client's request land on the current run; temporalio/temporal issue 6375). The later run
 * answers it as the first did, or once its input is taken, instead of as a second delivery of the same input (a
 * `duplicate` drop). The key is 8 hex digits of the update id's hash, alone once the input was accepted, else followed by
 * `waiting`, `deferred` or the drop reason.
 */
export type HandedOverAck = [input: string, delivery: string];

export interface CompactionState {
  /** The compaction child now summarizing this thread. */
  running?: string;
  /** Compactions finished so far. */
  completed: number;
}
