/**
 * The data model shared by every layer (docs/architecture.md, "Data model").
 *
 * Everything here is plain JSON: it crosses Temporal payloads, the conversation store and the
 * client API unchanged. This module has no dependencies so that workflow code can import it.
 */
import type { BudgetExceeded } from './budget';

/**
 * A large input kept in the conversation store instead of a Temporal payload (`src/core/staged.ts`). A text that
 * carries one is only a preview: the slice replaces it with the staged bytes before it commits, so committed history
 * never holds a reference.
 */
export interface StagedRef {
  /** The staged blob's id in the conversation store. */
  id: string;
  /** Lowercase hex SHA-256 of the blob. */
  sha256: string;
  /** The blob's length in bytes. */
  bytes: number;
}

/**
 * A block of a tool result: text, or an image that is round-tripped unchanged. A text block with `staged` stands for
 * the whole staged content of its input (and its display segments).
 */
export type ToolResultContent =
  { type: 'text'; text: string; staged?: StagedRef } | { type: 'image'; data: string; mediaType: string };

/** What an input carries; user text with `staged` is a preview of the staged text. */
export type InputContent =
  | { type: 'text'; text: string; staged?: StagedRef }
  | { type: 'tool_result'; toolCallId: string; content: ToolResultContent[] };

/** Runtime-generated kinds of input (docs/semantics.md §1). */
export type SyntheticKind =
  | { type: 'subscription_event'; toolCallId: string; associative?: boolean; final?: boolean }
  | { type: 'thread_report'; toolCallId: string; childThreadId: string }
  | { type: 'parent_message'; toolCallId: string }
  | { type: 'compaction' }
  | { type: 'compaction_complete' }
  /**
   * Rewind the thread to its first `to` own items (issue 28 §2): what came after is archived, hidden from the model,
   * and the state it created is dropped. A control input, taken at the next pause between slices.
   */
  | { type: 'rewind'; to: number }
  /**
   * Move the thread onto the release its workers now run (issue 39, docs/upgrading.md): the run continues as new, with
   * its state, as soon as it is between slices. Taken at the signal, never queued: it counts as no input of the
   * conversation. Sent by `migrateThreads` / `infinity-temporal migrate`.
   */
  | { type: 'migrate' }
  /**
   * Move the thread to another agent (issue 40): its next slice runs with that agent's instructions, model and tools.
   * Taken at the signal, never queued; sent by `AgentClient.setAgent` / `infinity-temporal agent set`.
   */
  | { type: 'set_agent'; agent: string }
  /** A tool asks the user something about its pending call (RAP `oauth` / `user_choice`); shown, never in history. */
  | { type: 'prompt'; toolCallId: string; prompt: PendingPrompt };

/** What a tool waits for from the user while its call stays pending (RAP §5). */
export type PendingPrompt =
  | { kind: 'oauth'; authUrl: string }
  | { kind: 'user_choice'; id: string; prompt: string; choices: string[]; default: number; responseUrl: string };

/** UI-only rendering of a tool result; the model always sees the full text. */
export type DisplaySegment =
  | { type: 'text'; content: string }
  | { type: 'diff'; content: { path: string; patch: string } }
  | { type: 'image'; content: { data: string; mediaType: string } };

/**
 * The only input a thread accepts. One signal carries one message.
 * `id` is the dedup id: delivering the same id twice has the effect of delivering it once.
 */
export interface InputMessage {
  id: string;
  threadId: string;
  content: InputContent;
  synthetic?: SyntheticKind;
  /** Replaces the root thread's metadata before the input is processed. */
  metadata?: Record<string, unknown>;
  /** On a tool result: the call started a subscription. */
  subscription?: boolean;
  displayAs?: DisplaySegment[];
}

/** One committed history item; every item holds exactly one content block. */
export type HistoryItem =
  /** `staged`: in flight only (see {@link StagedRef}); never in committed history. */
  | { kind: 'user'; text: string; staged?: StagedRef }
  | { kind: 'assistant'; text: string }
  | { kind: 'reasoning'; text: string; providerMetadata?: Record<string, unknown> }
  | { kind: 'tool_call'; id: string; name: string; args: unknown }
  | { kind: 'tool_result'; id: string; content: ToolResultContent[]; displayAs?: DisplaySegment[] }
  | {
      kind: 'subscription_event';
      toolCallId: string;
      childThreadId?: string;
      invocation: { id: string; name: 'receive_event__injected'; args: unknown };
      result: { id: string; content: ToolResultContent[] };
    }
  /**
   * Where a rewind took effect (issue 28 §2): the thread went back to its first `to` own items here, and the items from
   * `to` to just before this one are archived (`branch`, counted from 1). Never shown to the model.
   */
  | { kind: 'rewind'; to: number; branch: number };

/** A history item with the message id that makes its commit idempotent (docs/semantics.md §13). */
export interface StoredItem {
  messageId: string;
  item: HistoryItem;
}

/** The kind of a thread, shown as the `ThreadKind` search attribute. */
export type ThreadKind = 'root' | 'child' | 'event' | 'compaction';

/**
 * The `AgentStatus` search attribute. `failed`: the last slice failed for good (its inputs were set aside, or the store
 * refused the commit); the next successful slice clears it. The client also reports `failed` for a thread whose workflow
 * task keeps failing (e.g. a nondeterministic deploy). `over_budget`: a slice would have started over the thread's,
 * its tree's or its tenant's budget; the thread keeps its batch and queue and resumes when the budget is raised.
 */
export type AgentStatus =
  | 'idle'
  | 'running'
  | 'waiting_tool'
  | 'failed'
  | 'closed'
  | 'over_budget'
  /** Release 0.13 (issue 40): no worker defines the thread's agent; it keeps its queue and waits (`agentUnavailable`). */
  | 'agent_unavailable';

/** Inputs of a slice that failed on every attempt, set aside so the thread can go on (status().setAside). */
export interface SetAsideBatch {
  /** The slice id the batch was given to. */
  sliceId: string;
  /** Why the slice failed (the last attempt's error). */
  reason: string;
  /** Message ids of the items set aside. */
  messageIds: string[];
  /** Tool calls whose results were set aside: each was answered with an error result instead. */
  answeredWithError: string[];
}

/** The tool call a thread waits on: the last committed item is this unanswered call. */
export interface PendingCall {
  id: string;
  name: string;
  /** Passive calls represent waiting (e.g. `sleep_until_event_or_input`) and never defer events. */
  passive: boolean;
}

export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

/** Adds usage counts; a count stays undefined only if it is undefined on both sides. */
export function addUsage(a: TokenUsage | undefined, b: TokenUsage | undefined): TokenUsage | undefined {
  if (!a) return b && { ...b };
  if (!b) return { ...a };
  const sum = (x?: number, y?: number) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const out: TokenUsage = {};
  const input = sum(a.inputTokens, b.inputTokens);
  const output = sum(a.outputTokens, b.outputTokens);
  const total = sum(a.totalTokens, b.totalTokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (total !== undefined) out.totalTokens = total;
  return out;
}

/** Tokens the last model request occupied: what compaction compares with the context window. */
export function contextTokens(u: TokenUsage): number | undefined {
  return u.totalTokens ?? (u.inputTokens !== undefined ? u.inputTokens + (u.outputTokens ?? 0) : undefined);
}

/** Why an input was dropped without reaching history. */
export type DropReason =
  | 'closed'
  | 'duplicate'
  | 'already_processed'
  | 'wrong_call'
  | 'malformed'
  | 'unknown_subscription'
  | 'unknown_call'
  /** For a call a rewind archived: its late result, its subscription's events, its child's reports (issue 28 §2). */
  | 'rewound';

/** One input a thread dropped: its id (when it had one), the reason, and what it was, in a few words. */
export interface DroppedInput {
  id?: string;
  reason: DropReason;
  what: string;
}

/** The `drops` query: counts per reason across continue-as-new, and the last few drops of this run, newest last. */
export interface DroppedInputs {
  counts: Partial<Record<DropReason, number>>;
  recent: DroppedInput[];
}

/**
 * What a thread did with an acknowledged input: it reached history (or waits, held back behind the pending call, and
 * will), or it was dropped and why.
 */
export type DeliveryAck = { accepted: true; deferred?: boolean } | { accepted: false; reason: DropReason };

/**
 * Where a fork's history comes from: the first `at` of the source thread's own committed items, with everything the
 * source inherited before them (issue 28 §1). The fork shares them in the store; it copies none.
 */
export interface ForkPoint {
  threadId: string;
  /** How many of the source's own items the fork starts with. */
  at: number;
}

/** A thread's externally visible state (`thread.status()`). */
export interface ThreadStatus {
  threadId: string;
  kind: ThreadKind;
  status: AgentStatus;
  parentThreadId?: string;
  /** A fork (`AgentClient.forkThread`): the thread and point its history was taken from. */
  forkedFrom?: ForkPoint;
  pendingCall: PendingCall | null;
  /** Committed history length (own items only). */
  historyLength: number;
  /** Slices run so far, across continue-as-new. */
  slices: number;
  /** Workflow runs of this thread: 1 + continue-as-new count. */
  runs: number;
  /** Inputs received but not yet processed. */
  queued: number;
  /** Events and reports held back until the pending call is answered (docs/semantics.md §8). */
  deferred: number;
  /** Inputs dropped per reason, across continue-as-new. */
  dropped: Partial<Record<DropReason, number>>;
  /** Active subscriptions: tool call id → tool name. */
  subscriptions: Record<string, string>;
  /** Child thread ids. */
  children: string[];
  /** Usage of the last slice. */
  lastUsage?: TokenUsage;
  /** Usage of all slices so far, across continue-as-new. */
  usage?: TokenUsage;
  /** Compactions finished so far, and the compaction thread at work now (docs/semantics.md §12). */
  compaction: { completed: number; running?: string };
  /** What the pending call's tool asks of the user (an OAuth link, a choice), until the call is answered. */
  prompts: (PendingPrompt & { toolCallId: string })[];
  /** The most recent batches set aside because their slice failed for good (at most 20, across continue-as-new). */
  setAside?: SetAsideBatch[];
  /** Set when the last slice failed for good; cleared by the next successful one. */
  lastError?: string;
  /** While the thread waits for a budget raise (status `over_budget`): the limit its next slice found reached. */
  overBudget?: BudgetExceeded;
  /** The thread's agent (issue 40); absent: the worker's default agent. */
  agent?: string;
  /** While no worker defines the thread's agent (status `agent_unavailable`): which, and since how many checks. */
  agentUnavailable?: { agent: string; checks: number; known?: string[]; reason?: string };
  /**
   * The run was due to continue as new but its state would be `bytes` long, over `limit`: it goes on in the same run
   * until its queue shrinks (docs/limits.md). Absent otherwise.
   */
  oversizedState?: { bytes: number; limit: number };
  /**
   * This answer left parts out to stay within its own bound (the oldest prompts and set-aside batches, all but the
   * newest children): their names. Absent when it is whole.
   */
  truncated?: string[];
}

/** Live events of a thread (docs/guide.md, "Live events across processes"; their transport: decision 33). */
export type ThreadEvent = { threadId: string } & (
  | { type: 'user_input'; text: string }
  | { type: 'tool_result'; toolCallId: string; text: string }
  /** A subscription event or a child's report appended to the thread (`receive_event__injected`). */
  | { type: 'event'; toolCallId: string; toolName?: string; childThreadId?: string; text: string }
  /** A compaction of this thread was applied: later slices see `sourceThreadId`'s summary instead of the first `upTo` items. */
  | { type: 'compaction_applied'; sourceThreadId: string; upTo: number }
  /**
   * The slice's model call starts. `at`: the committed history length the slice builds on, so its items land from
   * there (a follower that read `at` or fewer items has not seen them; one that read more has). A slice's events run
   * from its `status: running` (then the inputs it appends, then this) to its `completion_finished`.
   */
  | { type: 'completion_started'; sliceId: string; at?: number }
  | { type: 'text_delta'; text: string }
  | { type: 'thinking_started' }
  | { type: 'thinking_delta'; text: string }
  | { type: 'thinking_ended' }
  | { type: 'tool_call'; id: string; name: string; args: unknown }
  /** The slice committed; `length`: the thread's committed history length after it. */
  | { type: 'completion_finished'; sliceId: string; usage?: TokenUsage; length?: number }
  | { type: 'info'; text: string }
  | { type: 'status'; status: AgentStatus }
  /** A remote subscriber missed events that are no longer buffered: committed history fills the gap. */
  | { type: 'replay_gap' }
  /** A tool asks the user to authorize (open `authUrl`) or to choose (answer with `thread.answerChoice`). */
  | { type: 'prompt'; toolCallId: string; prompt: PendingPrompt }
  /** A tool's display-only view of the thread changed (RAP `view_update`); never in history. */
  | { type: 'view_update'; viewType: string; content: unknown }
  /** A slice did not start: the thread's, its tree's or its tenant's budget is reached (status `over_budget`). */
  | ({ type: 'budget_exceeded' } & BudgetExceeded)
  /** A slice did not start: the worker has no definition of the thread's agent (status `agent_unavailable`). */
  | { type: 'agent_unavailable'; agent: string; known?: string[]; reason?: string }
);
