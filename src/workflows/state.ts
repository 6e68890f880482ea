/**
 * The thread workflow's state: restored from its start arguments or the previous run's carried state, and carried
 * across continue-as-new (the serialized forms are in contract.ts).
 */
import type { BudgetExceeded } from '../core/budget';
import type { ThrottledSlice } from '../core/capacity';
import type { PrepareState } from '../core/prepare';
import type { BudgetUpdate } from '../core/slice-protocol';
import type {
  DroppedInput,
  DropReason,
  InputMessage,
  PendingPrompt,
  SetAsideBatch,
  StoredItem,
  TokenUsage,
} from '../core/types';
import {
  CARRIED_STATE_VERSION,
  type CarriedState,
  type CompactionState,
  type HandedOverAck,
  type SleepTimer,
  type ThreadWorkflowArgs,
} from './contract';
import { bindable, call, count, flag, inputs, items, list, pairs, record, timers } from './tolerant';

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
    // Bound into the store's budget queries by every slice: a value no query takes is left out (./tolerant.ts).
    tenant: bindable(raw.tenant),
    // Carried state that is no object would be read field by field all the same (a string's `length` as the thread's).
    carried: record(raw.carried),
  };
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
      closed: flag(c?.closed),
      pendingCall: call(c?.pendingCall ?? seed?.pendingCall),
      processedInputIds: new Set(list(c?.processedInputIds)),
      processedToolCalls: new Set(list(c?.processedToolCalls)),
      subscriptions: new Map(pairs(c?.subscriptions)),
      eventTargets: new Map(pairs(c?.eventTargets ?? seed?.eventTargets)),
      deferred: inputs(c?.deferred),
      metadata: c ? c.metadata : args.metadata,
      // Read totally: a hand-made start's junk here means no rewound calls, not a wedged thread.
      rewound: new Set(Array.isArray(c?.rewound) ? c.rewound.filter((x) => typeof x === 'string') : []),
    },
    length: count(c?.length),
    slices: count(c?.slices),
    inbox: inputs(c?.inbox ?? seed?.inbox),
    prefix: items(c?.prefix ?? seed?.prefix),
    carry: items(c?.carry),
    blocked: c?.blocked ?? false,
    children: new Map(pairs(c?.children)),
    timers: timers(c?.timers),
    dropped: c?.dropped ?? {},
    lastUsage: c?.lastUsage,
    usage: c?.usage,
    compaction: c?.compaction ?? { completed: 0 },
    prompts: c?.prompts ?? [],
    lastText: c?.lastText,
    lastError: c?.lastError,
    runs: count(c?.runs) + 1,
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

/**
 * The children a run carries to the next: the most recent ones (release 0.10). Every child a thread ever started used
 * to be carried, an event child per subscription event among them, so a thread that watched for long carried a growing
 * list toward the server's payload limit (about 85 bytes a child: 2 MiB at ~25,000). A child past the window can no
 * longer be messaged (`send_message_to_child` answers that it is closed) or cancelled with the thread or by a rewind
 * past its spawn; it closed long before, in practice. No command changes: a continue-as-new's input is not compared
 * on replay, and a run reads every child its input holds.
 */
export const CHILDREN_WINDOW = 1000;

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
    children: [...s.children].slice(-CHILDREN_WINDOW),
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
    ...(s.prep.rewound && s.prep.rewound.size > 0 && { rewound: lastN(s.prep.rewound, dedupWindow) }),
  };
}
