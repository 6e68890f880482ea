/**
 * The thread workflow's state and its small serialized form carried across continue-as-new.
 */
import type { BudgetExceeded } from '../core/budget';
import type { ThrottledSlice } from '../core/capacity';
import type { PrepareState } from '../core/prepare';
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
  /** Heartbeat timeout of a slice: how fast a dead worker is noticed (default 4 s). */
  sliceHeartbeatTimeoutMs?: number;
  /** Upper bound of one slice (default 30 min). */
  sliceTimeoutMs?: number;
  /** Attempts of one slice before the thread reports an error and waits for new input (default 10). */
  sliceMaxAttempts?: number;
  /**
   * Input and call ids a run hands to the next, for telling a second delivery from a first.
   * @default 4096
   */
  dedupWindow?: number;
  /**
   * Keep the `AgentStatus` search attribute current (default true). Each change is a history event and a visibility
   * write, two per tool round trip; turn it off when threads are never listed by status.
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
   * `'0.5'`: the thread follows the rules of releases 0.2 to 0.5 without asking `patched()` for them, so its runs
   * record none of their patch markers and no `TemporalChangeVersion` upsert (two history events and a visibility write
   * fewer per run, decision 66). Children and continue-as-new runs inherit it. Set it only once every worker runs
   * release 0.6 or later, and roll back no worker below 0.6 after: older code ignores the field, asks `patched()` while
   * replaying such a history, finds no marker and takes release 0.1's rules (nondeterminism). A thread a 0.5 worker took
   * a task of anyway has the markers in its history: 0.6 code still asks `patched()` while replaying (never live), so
   * that history replays too (test/patch-option.test.ts).
   * @default none (every run asks `patched()` as before)
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
  /** Set by continue-as-new only. */
  carried?: CarriedState;
}

/**
 * The thread's arguments as given, or what a thread started by hand needs: a start with no input or `{}` (a raw
 * `temporal workflow start`) is a root thread named by its workflow id.
 */
export function threadArgs(given: unknown, workflowId: string): ThreadWorkflowArgs {
  const raw = (given !== null && typeof given === 'object' ? given : {}) as Partial<ThreadWorkflowArgs>;
  return {
    ...raw,
    threadId: typeof raw.threadId === 'string' && raw.threadId !== '' ? raw.threadId : workflowId,
    kind: raw.kind ?? 'root',
  };
}

/** A pending `sleep`/`sleep_until`: wakes the thread with `text` as the call's result. */
export interface SleepTimer {
  callId: string;
  wakeAtMs: number;
  text: string;
}

/**
 * Version of {@link CarriedState} written by this code. 1 (absent): release 0.1. 2: adds `blocked`, `failed` and
 * `setAside`. 3: adds `recentDrops`. 4: adds `overBudget` and `budgetUpdates`. Readers accept every version up to theirs and ignore fields they do not know, so a run continued by
 * older code during a rolling deploy loses only what that code cannot show (docs/upgrading.md).
 */
export const CARRIED_STATE_VERSION = 4;

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
  prompts?: ThreadState['prompts'];
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

export interface ThreadState {
  prep: PrepareState;
  length: number;
  slices: number;
  inbox: InputMessage[];
  /** Items the next slice commits before anything else (a spawned thread's seed). */
  prefix: StoredItem[];
  /** Items handed to a slice that did not commit; the next slice commits exactly these first. */
  carry: StoredItem[];
  /** The last slice failed for good: wait for new input before trying again. */
  blocked: boolean;
  /** Child thread id → the call it belongs to. */
  children: Map<string, string>;
  timers: SleepTimer[];
  dropped: Partial<Record<DropReason, number>>;
  lastUsage?: TokenUsage;
  /** Tokens used by all slices of this thread, across continue-as-new. */
  usage?: TokenUsage;
  compaction: CompactionState;
  /** What the pending call's tool asks of the user; cleared when the call is answered or interrupted. */
  prompts: (PendingPrompt & { toolCallId: string })[];
  lastText?: string;
  lastError?: string;
  runs: number;
  /** The last slice failed for good and nothing has succeeded since (status `failed`; release 0.2 rules only). */
  failed: boolean;
  setAside: SetAsideBatch[];
  /** The last few inputs dropped, newest last. */
  recentDrops: DroppedInput[];
  /** The calls the last slice made (`name {args}`), for the current details; this run only. */
  lastCalls?: string[];
  /** The limit the last slice found reached: the thread waits for a `budget` signal (status `over_budget`). */
  overBudget?: BudgetExceeded;
  /** Limits `budget` signals set, for the next slice to write to the store before its check. */
  budgetUpdates: BudgetUpdate[];
  /** How many of `budgetUpdates` the running slice took (removed once it applied them); this run only. */
  budgetSent: number;
  /** Acknowledged deliveries the run before handed over, or this run hands to the next (set just before it continues). */
  acks: HandedOverAck[];
  /** The last slice found no provider capacity: the loop waits this long before it runs the batch again; this run only. */
  throttled?: ThrottledSlice;
}

export function restoreState(args: ThreadWorkflowArgs): ThreadState {
  const c = args.carried;
  const seed = c ? undefined : args.seed;
  return {
    prep: {
      closed: c?.closed ?? false,
      pendingCall: c?.pendingCall ?? seed?.pendingCall ?? null,
      processedInputIds: new Set(c?.processedInputIds),
      processedToolCalls: new Set(c?.processedToolCalls),
      subscriptions: new Map(c?.subscriptions),
      eventTargets: new Map(c?.eventTargets ?? seed?.eventTargets),
      deferred: c?.deferred ?? [],
      metadata: c ? c.metadata : args.metadata,
    },
    length: c?.length ?? 0,
    slices: c?.slices ?? 0,
    inbox: c?.inbox ?? seed?.inbox ?? [],
    prefix: c?.prefix ?? seed?.prefix ?? [],
    carry: c?.carry ?? [],
    blocked: c?.blocked ?? false,
    children: new Map(c?.children),
    timers: c?.timers ?? [],
    dropped: c?.dropped ?? {},
    lastUsage: c?.lastUsage,
    usage: c?.usage,
    compaction: c?.compaction ?? { completed: 0 },
    prompts: c?.prompts ?? [],
    lastText: c?.lastText,
    lastError: c?.lastError,
    runs: (c?.runs ?? 0) + 1,
    failed: c?.failed ?? false,
    setAside: c?.setAside ?? [],
    recentDrops: c?.recentDrops ?? [],
    ...(c?.overBudget && { overBudget: c.overBudget }),
    budgetUpdates: c?.budgetUpdates ?? [],
    budgetSent: 0,
    acks: c?.acks ?? [],
  };
}

/** {@link ThreadOptions.dedupWindow}'s default. */
export const DEDUP_WINDOW = 4096;

/** Sets keep insertion order, so the window keeps the most recent ids. */
export function lastN(set: Set<string>, n: number): string[] {
  const all = [...set];
  return all.length > n ? all.slice(all.length - n) : all;
}

export function carryState(s: ThreadState, dedupWindow: number): CarriedState {
  return {
    version: CARRIED_STATE_VERSION,
    length: s.length,
    slices: s.slices,
    closed: s.prep.closed,
    pendingCall: s.prep.pendingCall,
    processedInputIds: lastN(s.prep.processedInputIds, dedupWindow),
    processedToolCalls: lastN(s.prep.processedToolCalls, dedupWindow),
    subscriptions: [...s.prep.subscriptions],
    eventTargets: [...s.prep.eventTargets],
    children: [...s.children],
    deferred: s.prep.deferred,
    timers: s.timers,
    metadata: s.prep.metadata,
    inbox: s.inbox,
    prefix: s.prefix,
    carry: s.carry,
    dropped: s.dropped,
    lastUsage: s.lastUsage,
    usage: s.usage,
    compaction: s.compaction,
    prompts: s.prompts,
    lastText: s.lastText,
    lastError: s.lastError,
    runs: s.runs,
    blocked: s.blocked,
    failed: s.failed,
    setAside: s.setAside,
    recentDrops: s.recentDrops,
    // Only when set: every other thread's carried state stays as it was.
    ...(s.overBudget && { overBudget: s.overBudget }),
    ...(s.budgetUpdates.length > 0 && { budgetUpdates: s.budgetUpdates }),
    ...(s.acks.length > 0 && { acks: s.acks }),
  };
}
