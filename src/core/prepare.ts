/**
 * The prepare phase of a slice (reference spec §2.4, §5): which inputs of a batch reach history, in what form,
 * and which are dropped. Pure and deterministic; the thread workflow runs it on its own state, so the activity
 * never has to load history to make these decisions.
 */
import { messageIds } from './ids';
import { INTERRUPT_PREFIX, INTERRUPTED_RESULT } from './texts';
import type { DropReason, HistoryItem, InputMessage, PendingCall, StoredItem } from './types';
import { isUserText } from './validate';

/** The part of a thread's state the prepare rules read and update. Mutated in place by {@link prepareBatch}. */
export interface PrepareState {
  closed: boolean;
  /** The unanswered tool call that is the last committed item, if any. */
  pendingCall: PendingCall | null;
  processedInputIds: Set<string>;
  processedToolCalls: Set<string>;
  /** Active subscriptions: tool call id → tool name. */
  subscriptions: Map<string, string>;
  metadata?: Record<string, unknown>;
}

export interface Dropped {
  id: string;
  reason: DropReason;
}

export interface PrepareOutcome {
  /** Items to append, in order, before the completion. */
  append: StoredItem[];
  /** At least one input reached history: a completion should run. */
  ready: boolean;
  dropped: Dropped[];
  /** Pending calls this batch interrupted (their real results will be dropped). */
  interruptedCalls: string[];
}

/**
 * Applies the prepare rules to a batch, in arrival order, updating `state`.
 *
 * Synthetic inputs (events, reports, compaction) are not routed here yet and are dropped as `unsupported`.
 */
export function prepareBatch(state: PrepareState, batch: readonly InputMessage[]): PrepareOutcome {
  const out: PrepareOutcome = { append: [], ready: false, dropped: [], interruptedCalls: [] };
  for (const input of batch) {
    const reason = prepareOne(state, input, out);
    if (reason) out.dropped.push({ id: input.id, reason });
    else out.ready = true;
  }
  return out;
}

function prepareOne(state: PrepareState, input: InputMessage, out: PrepareOutcome): DropReason | undefined {
  if (state.closed) return 'closed';
  // Metadata is applied even when the input turns out to be a duplicate (reference spec §2.4 step 4).
  if (input.metadata) state.metadata = input.metadata;
  if (input.synthetic) return 'unsupported';
  if (state.processedInputIds.has(input.id)) return 'duplicate';

  let item: HistoryItem;
  if (input.content.type === 'tool_result') {
    const callId = input.content.toolCallId;
    if (state.processedToolCalls.has(callId)) {
      // Recorded, so a redelivery of this same message is recognised as a plain duplicate.
      state.processedInputIds.add(input.id);
      return 'already_processed';
    }
    if (state.pendingCall?.id !== callId) return 'wrong_call';
    item = { kind: 'tool_result', id: callId, content: input.content.content };
    if (input.displayAs) item.displayAs = input.displayAs;
    if (input.subscription) state.subscriptions.set(callId, state.pendingCall.name);
    state.processedToolCalls.add(callId);
    state.pendingCall = null;
  } else {
    const pending = state.pendingCall;
    if (pending && !state.processedToolCalls.has(pending.id)) {
      out.append.push({
        messageId: messageIds.interrupted(pending.id),
        item: { kind: 'tool_result', id: pending.id, content: [{ type: 'text', text: INTERRUPTED_RESULT }] },
      });
      state.processedToolCalls.add(pending.id);
      out.interruptedCalls.push(pending.id);
    }
    state.pendingCall = null;
    item = { kind: 'user', text: input.content.text };
  }
  state.processedInputIds.add(input.id);
  out.append.push({ messageId: input.id, item });
  return undefined;
}

/**
 * After a user interrupted a running slice, the next slice takes only the user texts of the inbox, the first one
 * marked with `<interrupt>`; everything else waits for the slice after (reference spec §5.2).
 */
export function splitInterruptBatch(inbox: readonly InputMessage[]): {
  batch: InputMessage[];
  rest: InputMessage[];
} {
  const batch: InputMessage[] = [];
  const rest: InputMessage[] = [];
  for (const m of inbox) {
    if (!isUserText(m) || m.content.type !== 'text') {
      rest.push(m);
    } else if (batch.length === 0) {
      batch.push({ ...m, content: { type: 'text', text: `${INTERRUPT_PREFIX}${m.content.text}` } });
    } else {
      batch.push(m);
    }
  }
  return { batch, rest };
}
