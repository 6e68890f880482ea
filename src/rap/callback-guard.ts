/**
 * Whether a callback may still reach its thread. Callback URLs do not expire; the thread's own state says whether
 * one is still good (the `callbackState` query), so revocation survives a gateway restart and works for a gateway
 * that has nothing but a Temporal client. 410 Gone: the call was answered, its subscription ended, or the thread
 * closed. A bounded memory of what this gateway delivered covers the moments before the thread records it (409).
 */
import type { CallbackStateCheck } from '../core/callback-state';
import type { RapCallback } from './wire';

export type { CallbackStateCheck };

export type Admission = { ok: true } | { ok: false; status: 409 | 410; error: string };

const GONE: Record<'closed' | 'spent', string> = {
  closed: 'this callback URL was revoked: its thread is closed',
  spent: 'this callback URL was revoked: its tool call was answered, or its subscription ended',
};

export interface CallbackGuard {
  /**
   * Admits a callback or says why not. An admitted result or final event is remembered at once, so that a second one
   * (even a concurrent one) is refused before the thread has seen the first.
   */
  admit(cb: RapCallback, threadId: string, callId: string): Promise<Admission>;
  /** Forgets an admitted callback whose delivery failed: the tool may send it again. */
  undo(cb: RapCallback, threadId: string, callId: string): void;
}

/** `remember`: how many delivered results and final events to keep (oldest forgotten first; the thread knows them). */
export function callbackGuard(check: CallbackStateCheck | undefined, remember = 10_000): CallbackGuard {
  const seen = new Set<string>(); // a Set keeps insertion order: the first entry is the oldest
  const key = (threadId: string, callId: string, what: 'result' | 'events') =>
    `${what}\u0000${threadId}\u0000${callId}`;
  const keyOf = (cb: RapCallback, threadId: string, callId: string) =>
    cb.type === 'tool_result'
      ? key(threadId, callId, 'result')
      : cb.type === 'subscription_event' && cb.final
        ? key(threadId, callId, 'events')
        : undefined;
  return {
    async admit(cb, threadId, callId) {
      const state = await check?.(threadId, callId);
      if (state === 'closed' || state === 'spent') return { ok: false, status: 410, error: GONE[state] };
      // A subscription keeps its URL for events (and views); the call itself already has its result.
      if (state === 'subscribed' && cb.type !== 'subscription_event' && cb.type !== 'view_update') {
        return { ok: false, status: 409, error: 'this tool call already has its result (its subscription is active)' };
      }
      if (cb.type === 'tool_result' && seen.has(key(threadId, callId, 'result')))
        return { ok: false, status: 409, error: 'this tool call already has its result' };
      if (cb.type === 'subscription_event' && seen.has(key(threadId, callId, 'events')))
        return { ok: false, status: 409, error: 'this subscription has ended' };
      const k = keyOf(cb, threadId, callId);
      if (k !== undefined) {
        seen.add(k);
        if (seen.size > remember) seen.delete(seen.values().next().value!);
      }
      return { ok: true };
    },
    undo(cb, threadId, callId) {
      const k = keyOf(cb, threadId, callId);
      if (k !== undefined) seen.delete(k);
    },
  };
}
