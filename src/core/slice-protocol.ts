/**
 * The contract between the thread workflow and the `runSlice` activity (DESIGN §5).
 * Both directions stay small: ids, counters and the items being appended, never the conversation.
 */
import type { InputMessage, PendingCall, StoredItem, ThreadKind, TokenUsage } from './types';

export interface SliceInput {
  threadId: string;
  kind: ThreadKind;
  parentThreadId?: string;
  /** Unique per thread, stable across activity retries: the commit is idempotent on it. */
  sliceId: string;
  /** Items the workflow accepted from its inbox, appended before the completion. */
  append: StoredItem[];
  /** The committed length the workflow believes in; the commit is conditional on it. */
  expectedLength: number;
}

export interface SliceResult {
  sliceId: string;
  /** Committed history length after this slice. */
  length: number;
  /** The async tool call this slice committed and dispatched; the thread now waits for its result. */
  pendingCall: PendingCall | null;
  /** Tool calls the slice answered itself (sync tools, unknown tools): later results for them are stale. */
  answeredCallIds: string[];
  /** Inputs for this same thread produced by dispatch (e.g. an invalid-arguments error result). */
  followUps: InputMessage[];
  usage?: TokenUsage;
  /** The last assistant text, shortened, for the Temporal UI. */
  lastText?: string;
  /** The slice was cancelled by a user interruption and committed what it had streamed. */
  interrupted: boolean;
  /** A model error that ended the completion early; what was committed before it stays. */
  error?: string;
}
