/**
 * The contract between the thread workflow and the `runSlice` activity (docs/architecture.md, "The slice protocol").
 * Both directions stay small: ids, counters and the items being appended, never the conversation.
 */
import type { SliceAgent } from './agents';
import type { Budget, BudgetScope } from './budget';
import type { InputMessage, PendingCall, StoredItem, ThreadKind, TokenUsage } from './types';

export interface SliceInput {
  threadId: string;
  kind: ThreadKind;
  /** Unique per thread, stable across activity retries: the commit is idempotent on it. */
  sliceId: string;
  /** Items the workflow accepted from its inbox, appended before the completion. */
  append: StoredItem[];
  /** The committed length the workflow believes in; the commit is conditional on it. */
  expectedLength: number;
  /** For a spawned thread: where it hangs in its parent (written to its thread record on the first slice). */
  spawn?: SpawnPoint;
  /** Active subscriptions (tool call ids), for `cancel_subscription`. */
  subscriptions?: string[];
  /** Pending calls this slice's inputs interrupted: their tools are told (RAP `/cancel_tool_call`). */
  interruptedCalls?: string[];
  /** The end user of the thread tree, for remote tools (RAP `user_id`). */
  userId?: string;
  /** Attempts of this slice made before this activity's (its local first attempt): reported attempts count on from it. */
  priorAttempts?: number;
  /** Began as a local activity (release 0.3): its input is not in Temporal's history, so a retry checks it (decision 50). */
  local?: true;
  /**
   * The workflow takes a refusal before the model call (budget, capacity, agent) as the slice activity's result
   * rather than its failure (0.13, issue 41): a thread that waits for capacity records no failed attempt. Set by the
   * workflow of 0.13 on; an older workflow, which cannot read the result, gets the failure.
   */
  refusals?: 'outcome';
  /**
   * Release 0.6, a local slice of several queued inputs: which inputs it took (the queue's first `count`, the last
   * with id `lastId`). Recorded with its commit, so a retry of its workflow task takes the same ones (decision 67).
   */
  inputs?: SliceInputs;
  /** The tree's tenant (budgets, issue 27 §1); absent: the root thread id. */
  tenant?: string;
  /**
   * The thread's Temporal fairness key, weight and priority key: its fair share of a provider limit's key, and whether
   * it may use the key's reserve (issue 27 §2); absent: the root thread id, weight 1, the priority of its kind.
   */
  share?: { key: string; weight?: number; priority?: number };
  /** Limits the thread's `budget` signals set, applied to the store before the slice's budget check. */
  budgetUpdates?: BudgetUpdate[];
  /** The thread's agent (issue 40), resolved by the worker; absent: the worker's default agent. */
  agent?: string;
}

/** A limit set by the `budget` signal, for this thread's own key of `scope`; `null` removes it. */
export interface BudgetUpdate {
  scope: BudgetScope;
  budget: Budget | null;
}

/** The queued inputs a slice took: the first `count`, the last of them with id `lastId`. */
export interface SliceInputs {
  count: number;
  lastId: string;
}

/** What the workflow learns from the store before a local slice of several inputs (release 0.6, decision 67). */
export type SlicePeek = { committed: false } | { committed: true; inputs?: SliceInputs };

/**
 * What the local slice activity answers (release 0.3): the slice's result, or that it streams on past its budget and
 * waits on this worker's own task queue for an activity to adopt it; or (0.13, when its input says
 * `refusals: 'outcome'`) that it was refused before its model call, as the failure of that type would have said.
 */
export type LocalSliceOutcome = { done: SliceResult } | { handoff: { taskQueue: string } } | { refused: SliceRefusal };

/**
 * What the regular slice activities answer (`runSlice`, `adoptSlice`): the slice's result, or (0.13, when the input
 * says `refusals: 'outcome'`) its refusal before the model call.
 */
export type RemoteSliceOutcome = SliceResult | { refused: SliceRefusal };

/** A slice refused before its model call (a {@link SLICE_REFUSED} type), answered as a value (0.13, issue 41). */
export interface SliceRefusal {
  type: (typeof SLICE_REFUSED)[keyof typeof SLICE_REFUSED];
  message: string;
  /** The failure's first detail: a `BudgetExceeded`, `ThrottledSlice` or `AgentUnavailable`. */
  details?: unknown;
}

/** Where a child thread attaches to its parent: it inherits the parent's first `order` own items. */
export interface SpawnPoint {
  parentThreadId: string;
  /** The parent's tool call the child belongs to (a `spawn_thread` call, or the subscription call of an event child). */
  toolCallId: string;
  order: number;
}

/** A runtime tool the slice validated; the workflow carries it out (it needs workflow commands). */
export type RuntimeAction =
  /** `agent`: the child's agent when the model named one (issue 40); absent: the parent's own. */
  | { type: 'spawn'; callId: string; instructions: string; agent?: string }
  | { type: 'report'; callId: string; report: string }
  | { type: 'close'; callId: string; report?: string }
  | { type: 'message_child'; callId: string; childThreadId: string; message: string }
  | { type: 'sleep'; callId: string; wakeAtMs: number; text: string };

export interface SliceResult {
  sliceId: string;
  /** Committed history length after this slice. */
  length: number;
  /** The async tool call this slice committed and dispatched; the thread now waits for its result. */
  pendingCall: PendingCall | null;
  /** Tool calls the slice answered itself (sync tools, unknown tools): later results for them are stale. */
  answeredCallIds: string[];
  /** Inputs for this same thread produced by dispatch (the error result of a tool whose `execute` threw). */
  followUps: InputMessage[];
  /** Tokens used by all of this slice's model requests. */
  usage?: TokenUsage;
  /** The last assistant text, for the Temporal UI: whole up to `LAST_REPLY_MAX_CHARS` since release 0.5, 200 before. */
  lastText?: string;
  /** The tool calls this slice made, as `name {args}` lines (shortened; `core/slice-outline.ts`), since release 0.5. */
  calls?: string[];
  /** The slice was cancelled by a user interruption and committed what it had streamed. */
  interrupted: boolean;
  /** How many of the committed items were the slice's inputs (`append`), recorded since release 0.3. */
  appended?: number;
  /** A model error that ended the completion early; what was committed before it stays. */
  error?: string;
  /** The runtime tool the workflow must carry out; its call is `pendingCall`. */
  action?: RuntimeAction;
  /** Subscriptions ended by `cancel_subscription` in this slice. */
  cancelledSubscriptions?: string[];
  /** The last model request filled the context window past the compaction threshold. */
  compact?: true;
  /** The queued inputs the slice took, when its input said (release 0.6: a local slice of several). */
  inputs?: SliceInputs;
  /** The agent, model and definition the slice ran with (issue 40; since release 0.13). */
  agent?: SliceAgent;
}

/**
 * `ApplicationFailure.type`s of a slice refused before its model call (issue 27): it called and committed nothing and
 * is no failing slice; the thread keeps its batch and waits — for a budget raise (`details[0]`: a `BudgetExceeded`),
 * or on a timer for provider capacity (`details[0]`: a `ThrottledSlice`).
 */
export const SLICE_REFUSED = {
  overBudget: 'OverBudget',
  throttled: 'Throttled',
  /**
   * Release 0.13 (issue 40): the worker has no definition of the thread's agent (`details[0]`: an `AgentUnavailable`).
   * The thread keeps its batch and queue and waits until the agent is back or it is moved to another.
   */
  agentUnavailable: 'AgentUnavailable',
} as const;

/** The `rewindThread` activity's input (issue 28 §2): rewind `threadId`, now `expectedLength` items long, to its first `to` own items. */
export interface RewindInput {
  threadId: string;
  /** The slice id the rewind commits under (the thread's next slice). */
  sliceId: string;
  to: number;
  expectedLength: number;
  /** The calls the workflow's state tracks (pending call, subscriptions, children, timers, prompts). */
  calls: string[];
  /** The pending call: its tool is told it was cancelled when the range archives it (RAP `/cancel_tool_call`). */
  pendingCall?: string;
}

export interface RewindOutcome {
  /** Committed length after the rewind's slice. */
  length: number;
  /** The range's branch number (1 for the thread's first rewind). */
  branch: number;
  /** Those of `calls` the range archived. */
  archivedCalls: string[];
}

/** `ApplicationFailure.type` of a rewind the store refuses (a point outside the history or inside an archived range). */
export const REWIND_REFUSED = 'RewindRefused';
