/**
 * The thread workflow's state: restored from its start arguments or the previous run's carried state, and carried
 * across continue-as-new (the serialized forms are in contract.ts).
 */
import { agentName, agentNameProblem } from '../core/agents';
import type { BudgetExceeded } from '../core/budget';
import type { ThrottledSlice } from '../core/capacity';
import type { PrepareState } from '../core/prepare';
import type { BudgetUpdate, SpawnPoint } from '../core/slice-protocol';
import type {
  DroppedInput,
  DropReason,
  InputMessage,
  PendingPrompt,
  SetAsideBatch,
  StoredItem,
  ThreadKind,
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
import { clipped, ID_WINDOW_MAX_BYTES, newestWithin, SET_ASIDE_IDS } from '../core/state-bounds';
import {
  bindable,
  budgetUpdates,
  call,
  count,
  dropCounts,
  flag,
  inputs,
  items,
  list,
  overBudget,
  pairs,
  prompts,
  recentDrops,
  record,
  setAside,
  text,
  timers,
} from './tolerant';

/** What Temporal says of a run: the only source of a thread's identity and of its parent (decision 83). */
export interface RunOrigin {
  workflowId: string;
  /** The workflow id of the run's Temporal parent (a child workflow's; kept across continue-as-new). */
  parentWorkflowId?: string;
  /** The run was started by a continue-as-new (of this workflow id): the only source of carried state. */
  continued: boolean;
}

const KINDS: readonly ThreadKind[] = ['root', 'child', 'event', 'compaction'];

/**
 * The thread's arguments, with its identity taken from Temporal (decision 83): a run serves the thread whose id is its
 * workflow id; a child, event or compaction thread hangs under its Temporal parent, never under a thread its input
 * names; carried state comes only from this workflow's own continue-as-new. A start input that claims otherwise (a
 * hand-made `temporal workflow start`) has those fields left out, each named in `refused`: the thread starts as a root
 * thread of its own, with fresh state. What a client starts never differs from Temporal (the client starts each thread
 * under its thread id; a parent starts each child as a child workflow), so every run a client or parent started reads
 * as before and replays unchanged. A start with no input or `{}` is a root thread named by its workflow id.
 */
export function threadArgs(given: unknown, origin: RunOrigin): { args: ThreadWorkflowArgs; refused: string[] } {
  const raw = (given !== null && typeof given === 'object' ? given : {}) as Partial<ThreadWorkflowArgs>;
  const refused: string[] = [];
  const threadId = origin.workflowId;
  if (raw.threadId !== undefined && raw.threadId !== threadId && raw.threadId !== '')
    refused.push(`threadId ${JSON.stringify(raw.threadId).slice(0, 80)}: a thread is its workflow (${threadId})`);
  let kind: ThreadKind = KINDS.includes(raw.kind as ThreadKind) ? (raw.kind as ThreadKind) : 'root';
  const kindRefused = raw.kind !== undefined && raw.kind !== kind;
  if (kindRefused) refused.push(`kind ${JSON.stringify(raw.kind).slice(0, 40)}: not a thread kind`);
  const spawn = spawnPoint(raw.spawn, origin.parentWorkflowId);
  const spawnedKind = kind !== 'root';
  if (spawnedKind && !spawn) {
    refused.push(
      `kind ${kind}: a ${kind} thread is started by its parent thread as a child workflow` +
        (origin.parentWorkflowId === undefined ? '' : ` (spawn does not name its parent ${origin.parentWorkflowId})`),
    );
    kind = 'root';
  }
  // A spawn on a thread given as a root (or of no kind at all) is refused once, not again after its kind.
  if (!spawnedKind && !kindRefused && raw.spawn !== undefined)
    refused.push('spawn: only a child, event or compaction thread has one');
  const carried = record(raw.carried);
  if (carried && !origin.continued) refused.push("carried: state is carried only by this thread's own continue-as-new");
  const args: ThreadWorkflowArgs = {
    ...raw,
    threadId,
    kind,
    // Bound into the store's budget queries by every slice: a value no query takes is left out (./tolerant.ts).
    tenant: bindable(raw.tenant),
    // Release 0.13 (issue 40): a name no worker could define is left out (the thread runs the default agent).
    agent: agentName(raw.agent),
    // Carried state that is no object would be read field by field all the same (a string's `length` as the thread's).
    carried: origin.continued ? carried : undefined,
  };
  if (raw.agent !== undefined && args.agent === undefined) refused.push(`agent: ${agentNameProblem(raw.agent)}`);
  if (args.agent === undefined) delete args.agent;
  if (kind === 'root') delete args.spawn;
  else args.spawn = spawn;
  return { args, refused };
}

/** A spawn point naming the run's Temporal parent, read totally; else none. */
function spawnPoint(x: unknown, parent: string | undefined): SpawnPoint | undefined {
  const s = record(x as SpawnPoint | undefined);
  if (!s || parent === undefined || s.parentThreadId !== parent || typeof s.toolCallId !== 'string') return undefined;
  return { parentThreadId: parent, toolCallId: s.toolCallId, order: count(s.order) };
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
  /** The last slice failed for good and nothing has succeeded since (status `failed`). */
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
  /**
   * The run was due to continue as new, but the next run's arguments would be this many bytes, over
   * `CARRIED_MAX_BYTES`: it goes on (issue 38 §2); this run only.
   */
  carryOverBytes?: number;
  /** The last slice found no provider capacity: the loop waits this long before it runs the batch again; this run only. */
  throttled?: ThrottledSlice;
  /** The thread's agent (issue 40): the start's, or the last `set_agent`'s; carried in the next run's arguments. */
  agent?: string;
  /**
   * The last slice found no definition of the thread's agent (release 0.13): the thread waits, with its batch and
   * queue, until a `set_agent` or its next check (doubling from 30 s to 10 min); this run only.
   */
  agentMissing?: { agent: string; known?: string[]; reason?: string };
  /**
   * Checks in a row that found the agent missing (the wait doubles with each; 0 once a slice commits or the thread is
   * moved); this run only.
   */
  agentChecks: number;
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
    blocked: flag(c?.blocked),
    children: new Map(pairs(c?.children)),
    timers: timers(c?.timers),
    dropped: dropCounts(c?.dropped),
    lastUsage: c?.lastUsage,
    usage: c?.usage,
    compaction: c?.compaction ?? { completed: 0 },
    prompts: prompts(c?.prompts),
    lastText: text(c?.lastText),
    lastError: text(c?.lastError),
    runs: count(c?.runs) + 1,
    failed: flag(c?.failed),
    setAside: setAside(c?.setAside),
    recentDrops: recentDrops(c?.recentDrops),
    ...(overBudget(c?.overBudget) && { overBudget: c!.overBudget }),
    budgetUpdates: budgetUpdates(c?.budgetUpdates),
    budgetSent: 0,
    acks: c?.acks ?? [],
    agentChecks: 0,
    ...(args.agent !== undefined && { agent: args.agent }),
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

/**
 * The most recent ids of a set (sets keep insertion order), at most `n` (a window that is no positive count is the
 * default's) and at most {@link ID_WINDOW_MAX_BYTES} in all: a raw signal may bring ids of 64 KiB, and 4,096 of those
 * would carry 256 MiB (issue 38 §2). Ids past the bytes are forgotten as ids past the count are: a second delivery of
 * one is taken again.
 */
export function lastN(set: Set<string>, n: number): string[] {
  return newestWithin([...set], Number.isSafeInteger(n) && n > 0 ? n : DEDUP_WINDOW, ID_WINDOW_MAX_BYTES);
}

/** A set-aside batch as carried and shown: its reason clipped, at most {@link SET_ASIDE_IDS} message ids named. */
export function boundedSetAside(b: SetAsideBatch): SetAsideBatch {
  return {
    ...b,
    reason: clipped(String(b.reason)),
    messageIds: newestWithin(b.messageIds, SET_ASIDE_IDS, ID_WINDOW_MAX_BYTES / 16),
    answeredWithError: newestWithin(b.answeredWithError, SET_ASIDE_IDS, ID_WINDOW_MAX_BYTES / 16),
  };
}

/**
 * What a run carries to the next, every part within its bound (issue 38 §2; none of it is compared on replay: a
 * continue-as-new's input is not). The whole is checked against {@link CARRIED_MAX_BYTES} before the run continues
 * (continue-as-new.ts).
 */
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
    ...(s.lastText !== undefined && { lastText: clipped(s.lastText) }),
    ...(s.lastError !== undefined && { lastError: clipped(s.lastError) }),
    runs: s.runs,
    blocked: s.blocked,
    failed: s.failed,
    setAside: s.setAside.map(boundedSetAside),
    recentDrops: s.recentDrops,
    // Only when set: every other thread's carried state stays as it was.
    ...(s.overBudget && { overBudget: s.overBudget }),
    ...(s.budgetUpdates.length > 0 && { budgetUpdates: s.budgetUpdates }),
    ...(s.acks.length > 0 && { acks: s.acks }),
    ...(s.prep.rewound && s.prep.rewound.size > 0 && { rewound: lastN(s.prep.rewound, dedupWindow) }),
  };
}
