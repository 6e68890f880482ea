/**
 * The prepare phase of a slice (docs/semantics.md §1–§14): which inputs of a batch reach history, in what form,
 * and which are dropped. Pure and deterministic; the thread workflow runs it on its own state, so the activity
 * never has to load history to make these decisions.
 */
import { messageIds } from './ids';
import { INJECTED_TOOL_NAME, INTERRUPT_PREFIX, INTERRUPTED_RESULT } from './texts';
import type { DropReason, HistoryItem, InputMessage, PendingCall, StoredItem, ToolResultContent } from './types';
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
  /** Calls that reports and parent messages may refer to: own spawn calls and subscription calls, id → tool name. */
  eventTargets: Map<string, string>;
  /** Events and reports held back while a non-passive call is pending (docs/semantics.md §8). */
  deferred: InputMessage[];
  metadata?: Record<string, unknown>;
  /**
   * Calls a rewind archived (issue 28 §2): a late result for one, an event of its subscription or a report of its
   * child is dropped as `rewound`. Empty in every thread that was never rewound.
   */
  rewound?: Set<string>;
}

/** A non-associative subscription event: processed by a temporary child thread, not inline. */
export interface EventChildRequest {
  messageId: string;
  subscriptionCallId: string;
  content: ToolResultContent[];
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
  eventChildren: EventChildRequest[];
}

/**
 * Applies the prepare rules to a batch, in arrival order, updating `state`. `newId` makes the ids of synthetic
 * invocations (the workflow passes its deterministic UUID generator).
 */
export function prepareBatch(state: PrepareState, batch: readonly InputMessage[], newId: () => string): PrepareOutcome {
  const out: PrepareOutcome = { append: [], ready: false, dropped: [], interruptedCalls: [], eventChildren: [] };
  for (const input of batch) {
    const reason = prepareOne(state, input, out, newId);
    if (reason) out.dropped.push({ id: input.id, reason });
  }
  return out;
}

/** Answers the pending call with the interruption text, before a user message or an inline event. */
function interruptPending(state: PrepareState, out: PrepareOutcome): void {
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
}

function accept(state: PrepareState, out: PrepareOutcome, input: InputMessage, item: HistoryItem): undefined {
  state.processedInputIds.add(input.id);
  out.append.push({ messageId: input.id, item });
  out.ready = true;
  return undefined;
}

function prepareOne(
  state: PrepareState,
  input: InputMessage,
  out: PrepareOutcome,
  newId: () => string,
): DropReason | undefined {
  if (state.closed) return 'closed';
  // Metadata is applied even when the input turns out to be a duplicate (docs/semantics.md §1).
  if (input.metadata) state.metadata = input.metadata;
  const syn = input.synthetic;
  if (state.processedInputIds.has(input.id)) return 'duplicate';

  if (syn) {
    // Compaction and prompts are the workflow's own control inputs (workflows/control-inputs.ts); none reaches here.
    if (!('toolCallId' in syn) || syn.type === 'prompt' || input.content.type !== 'tool_result') return 'malformed';
    const callId = syn.toolCallId;
    if (state.rewound?.has(callId)) return 'rewound';
    if (syn.type === 'subscription_event') {
      // Events of unknown or cancelled subscriptions are discarded (RAP); `final` ends the subscription.
      if (!state.subscriptions.has(callId)) return 'unknown_subscription';
      if (syn.final) state.subscriptions.delete(callId);
      if (!syn.associative) {
        state.processedInputIds.add(input.id);
        out.eventChildren.push({ messageId: input.id, subscriptionCallId: callId, content: input.content.content });
        return undefined;
      }
    } else if (!state.eventTargets.has(callId)) {
      return 'unknown_call';
    }
    interruptPending(state, out);
    const invocationId = newId();
    const item: HistoryItem = {
      kind: 'subscription_event',
      toolCallId: callId,
      invocation: { id: invocationId, name: INJECTED_TOOL_NAME, args: { original_tool_call_id: callId } },
      result: { id: invocationId, content: input.content.content },
    };
    if (syn.type === 'thread_report') item.childThreadId = syn.childThreadId;
    return accept(state, out, input, item);
  }

  if (input.content.type === 'tool_result') {
    const callId = input.content.toolCallId;
    if (state.rewound?.has(callId)) return 'rewound';
    if (state.processedToolCalls.has(callId)) {
      // Recorded, so a redelivery of this same message is recognised as a plain duplicate.
      state.processedInputIds.add(input.id);
      return 'already_processed';
    }
    if (state.pendingCall?.id !== callId) return 'wrong_call';
    const item: HistoryItem = { kind: 'tool_result', id: callId, content: input.content.content };
    if (input.displayAs) item.displayAs = input.displayAs;
    if (input.subscription) {
      state.subscriptions.set(callId, state.pendingCall.name);
      state.eventTargets.set(callId, state.pendingCall.name);
    }
    state.processedToolCalls.add(callId);
    state.pendingCall = null;
    return accept(state, out, input, item);
  }

  interruptPending(state, out);
  // A staged text stays a preview with its reference until the slice loads it (core/staged.ts).
  const staged = input.content.staged;
  return accept(state, out, input, { kind: 'user', text: input.content.text, ...(staged && { staged }) });
}

const DEFERRABLE = new Set(['subscription_event', 'thread_report', 'parent_message']);

/**
 * Deferral (docs/semantics.md §8): while a non-passive call is pending, events and reports wait unless the batch
 * settles the call (user text, or the call's own result). Returns what to prepare now: the batch, then whatever
 * deferred inputs may go.
 */
export function applyDeferral(state: PrepareState, batch: readonly InputMessage[]): InputMessage[] {
  const p = state.pendingCall;
  if (p && !p.passive && !state.processedToolCalls.has(p.id)) {
    const settles = batch.some(
      (m) => isUserText(m) || (!m.synthetic && m.content.type === 'tool_result' && m.content.toolCallId === p.id),
    );
    if (!settles) {
      const now: InputMessage[] = [];
      for (const m of batch) (m.synthetic && DEFERRABLE.has(m.synthetic.type) ? state.deferred : now).push(m);
      return now;
    }
  }
  return [...batch, ...state.deferred.splice(0)];
}

/**
 * After a user interrupted a running slice, the next slice takes only the user texts of the inbox, the first one
 * marked with `<interrupt>`; everything else waits for the slice after (docs/semantics.md §4).
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
      batch.push({ ...m, content: { ...m.content, text: `${INTERRUPT_PREFIX}${m.content.text}` } });
    } else {
      batch.push(m);
    }
  }
  return { batch, rest };
}
