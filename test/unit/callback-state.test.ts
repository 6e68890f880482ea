/**
 * What a thread says of its calls when a callback arrives (the `callbackState` query), what the gateway's guard
 * makes of it, and tokens without expiry. Pure: no Temporal, no network (the live path is test/rap/callback-lifetime).
 */
import { describe, expect, it } from 'vitest';
import { callbackState } from '../../src/core/callback-state';
import { freshPrepareState } from './prepare-state';
import { callbackGuard } from '../../src/rap/callback-guard';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import type { RapCallback } from '../../src/rap/wire';

const prep = freshPrepareState;

describe('callbackState', () => {
  it('tells pending, subscribed, spent, closed and unknown calls apart', () => {
    const pendingCall = { id: 'p', name: 'run_build', passive: false };
    // `s` started a subscription (its result marked it processed), `a` was answered, `e` was a subscription that ended.
    const state = prep({
      pendingCall,
      processedToolCalls: new Set(['s', 'a', 'e']),
      subscriptions: new Map([['s', 'watch_repo']]),
    });
    expect(['p', 's', 'a', 'e', 'never-seen'].map((id) => callbackState(state, id))).toEqual([
      'pending',
      'subscribed',
      'spent',
      'spent',
      'unknown',
    ]);
    // A closed thread revokes everything, its active subscriptions and its pending call included.
    expect(['p', 's', 'never-seen'].map((id) => callbackState({ ...state, closed: true }, id))).toEqual([
      'closed',
      'closed',
      'closed',
    ]);
  });

  it('calls an interrupted call spent: its late result must not be delivered', () => {
    // interruptPending (core/prepare.ts) marks the call processed and clears the pending call.
    expect(callbackState(prep({ processedToolCalls: new Set(['p']) }), 'p')).toBe('spent');
  });
});

describe('callbackGuard', () => {
  const result = (id: string): RapCallback => ({ type: 'tool_result', group_id: 't', id, text: 'r' });
  const event = (final = false): RapCallback => ({
    type: 'subscription_event',
    group_id: 't',
    tool_call_id: 's',
    text: 'e',
    ...(final && { final: true }),
  });

  it('answers 410 for spent and closed calls, 409 for a second result to an active subscription, and lets events through', async () => {
    const states = { a: 'spent', c: 'closed', s: 'subscribed', p: 'pending' } as const;
    const guard = callbackGuard(async (_t, id) => states[id as keyof typeof states]);
    expect(await guard.admit(result('a'), 't', 'a')).toMatchObject({ ok: false, status: 410 });
    expect(await guard.admit(event(), 't', 'c')).toMatchObject({ ok: false, status: 410 });
    expect(await guard.admit(result('s'), 't', 's')).toMatchObject({ ok: false, status: 409 });
    expect(await guard.admit(event(), 't', 's')).toEqual({ ok: true });
    expect(await guard.admit(result('p'), 't', 'p')).toEqual({ ok: true });
  });

  it('refuses a second result before the thread has recorded the first, forgets the oldest beyond its bound, and undoes a failed delivery', async () => {
    const guard = callbackGuard(async () => undefined, 2); // the thread cannot tell (no worker): memory decides
    expect(await guard.admit(result('x'), 't', 'x')).toEqual({ ok: true });
    expect(await guard.admit(result('x'), 't', 'x')).toMatchObject({ ok: false, status: 409 });
    expect(await guard.admit(event(true), 't', 's')).toEqual({ ok: true });
    expect(await guard.admit(event(), 't', 's')).toMatchObject({
      ok: false,
      status: 409,
      error: 'this subscription has ended',
    });
    expect(await guard.admit(result('y'), 't', 'y')).toEqual({ ok: true }); // a third entry: `x` is forgotten
    expect(await guard.admit(result('x'), 't', 'x')).toEqual({ ok: true });
    guard.undo(result('x'), 't', 'x');
    expect(await guard.admit(result('x'), 't', 'x')).toEqual({ ok: true });
  });
});

describe('callback tokens', () => {
  it('never expire by default, keep an expiry they were minted with, and still rotate', () => {
    const k1 = newCallbackKey();
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1 } });
    const forever = tokens.mint({ threadId: 't', callId: 'c' });
    expect(tokens.verify(forever, Date.now() + 10 * 365 * 24 * 3600_000)).toEqual({
      ok: true,
      claims: { threadId: 't', callId: 'c' },
    });
    const bounded = tokens.mint({ threadId: 't', callId: 'c', expiresAt: Date.now() + 1000 });
    expect(tokens.verify(bounded)).toMatchObject({ ok: true, claims: { expiresAt: expect.any(Number) } });
    expect(tokens.verify(bounded, Date.now() + 2000)).toEqual({ ok: false, reason: 'expired' });
    const rotated = new CallbackTokens({ current: 'k2', keys: { k1, k2: newCallbackKey() } });
    expect(rotated.verify(forever).ok).toBe(true);
    expect(rotated.mint({ threadId: 't', callId: 'c' }).startsWith('k2.')).toBe(true);
  });
});
