/**
 * What a thread says about one of its tool calls when a callback for it arrives: the truth behind the RAP gateway's
 * 410 Gone. Callback URLs no longer expire; they live as long as their call or subscription, and only the thread
 * knows how long that is. Pure, so the workflow can answer it as a query (no commands, replay-safe).
 */
import type { PrepareState } from './prepare';

/**
 * - `pending`: the call is the thread's unanswered call; its result (or a prompt) is awaited.
 * - `subscribed`: the call's result started a subscription that is still active; its events are awaited.
 * - `spent`: the call was answered (a real or interrupted result) and is no active subscription, or its subscription
 *   ended (final event, `cancel_subscription`).
 * - `closed`: the thread is closed; none of its calls takes anything any more.
 * - `unknown`: the thread has no record of the call. Either it was never seen yet (the tool answered while the slice
 *   that dispatched it is still running, before the workflow recorded the pending call) or it was forgotten beyond the
 *   dedup window; either way the thread's own rules decide, so the callback is delivered.
 */
export type CallbackState = 'pending' | 'subscribed' | 'spent' | 'closed' | 'unknown';

export function callbackState(
  prep: Pick<PrepareState, 'closed' | 'pendingCall' | 'subscriptions' | 'processedToolCalls'>,
  callId: string,
): CallbackState {
  if (prep.closed) return 'closed';
  // Checked before `processedToolCalls`: the result that started a subscription marks its call processed.
  if (prep.subscriptions.has(callId)) return 'subscribed';
  if (prep.processedToolCalls.has(callId)) return 'spent';
  if (prep.pendingCall?.id === callId) return 'pending';
  return 'unknown';
}

/**
 * Asks the thread about one of its calls. Undefined when it cannot tell in time (no worker, an older worker without
 * the query, an unknown thread): the callback is then delivered, since a signal is durable and the thread drops
 * stale inputs itself. An event must never be lost to this check.
 */
export type CallbackStateCheck = (threadId: string, callId: string) => Promise<CallbackState | undefined>;
