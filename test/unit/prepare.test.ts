/**
 * The prepare rules as a pure function (docs/semantics.md §1–§14): dedup, closed threads, results for the pending call,
 * interruption, metadata, routing of reports and events, and deferral.
 */
import { describe, expect, it } from 'vitest';
import { applyDeferral, prepareBatch, splitInterruptBatch } from '../../src/core/prepare';
import { freshPrepareState } from './prepare-state';
import type { InputMessage } from '../../src/core/types';

const fresh = freshPrepareState;
let n = 0;
const newId = () => `uuid-${++n}`;
const text = (id: string, t: string): InputMessage => ({ id, threadId: 't', content: { type: 'text', text: t } });
const result = (id: string, callId: string, t: string, extra: Partial<InputMessage> = {}): InputMessage => ({
  id,
  threadId: 't',
  content: { type: 'tool_result', toolCallId: callId, content: [{ type: 'text', text: t }] },
  ...extra,
});

describe('prepareBatch', () => {
  it('accepts user text once per id', () => {
    const s = fresh();
    expect(prepareBatch(s, [text('m1', 'hello')], newId)).toMatchObject({
      ready: true,
      append: [{ messageId: 'm1', item: { kind: 'user', text: 'hello' } }],
    });
    expect(prepareBatch(s, [text('m1', 'hello')], newId)).toEqual({
      ready: false,
      append: [],
      dropped: [{ id: 'm1', reason: 'duplicate' }],
      interruptedCalls: [],
      eventChildren: [],
    });
  });

  it('drops everything for a closed thread without recording it', () => {
    const s = fresh({ closed: true });
    expect(prepareBatch(s, [text('m1', 'hi')], newId).dropped).toEqual([{ id: 'm1', reason: 'closed' }]);
    expect(s.processedInputIds.size).toBe(0);
  });

  it('accepts the result of the pending call and clears it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    const out = prepareBatch(s, [result('r1', 'tc-1', 'tool output')], newId);
    expect(out.append).toEqual([
      { messageId: 'r1', item: { kind: 'tool_result', id: 'tc-1', content: [{ type: 'text', text: 'tool output' }] } },
    ]);
    expect(s.pendingCall).toBeNull();
    expect(s.processedToolCalls.has('tc-1')).toBe(true);
  });

  it('interrupts a pending call with user text, then drops its late result and records it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    const out = prepareBatch(s, [text('m2', 'actually, never mind')], newId);
    expect(out.append.map((a) => [a.messageId, a.item])).toEqual([
      [
        'tc-1-interrupted',
        { kind: 'tool_result', id: 'tc-1', content: [{ type: 'text', text: 'Tool call interrupted by user' }] },
      ],
      ['m2', { kind: 'user', text: 'actually, never mind' }],
    ]);
    expect(out.interruptedCalls).toEqual(['tc-1']);
    const late = prepareBatch(s, [result('r1', 'tc-1', 'late')], newId);
    expect(late.dropped).toEqual([{ id: 'r1', reason: 'already_processed' }]);
    expect(s.processedInputIds.has('r1')).toBe(true);
  });

  it('drops a result for a call that is not pending without recording it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    expect(prepareBatch(s, [result('r9', 'tc-x', 'stale')], newId).dropped).toEqual([
      { id: 'r9', reason: 'wrong_call' },
    ]);
    expect(s.processedInputIds.has('r9')).toBe(false);
    expect(s.pendingCall?.id).toBe('tc-1');
  });

  it('tracks a subscription started by an accepted result', () => {
    const s = fresh({ pendingCall: { id: 'tc-sub', name: 'watch', passive: false } });
    prepareBatch(s, [result('r1', 'tc-sub', 'subscribed', { subscription: true })], newId);
    expect([...s.subscriptions]).toEqual([['tc-sub', 'watch']]);
  });

  it('applies metadata even from a duplicate', () => {
    const s = fresh({ processedInputIds: new Set(['m1']) });
    prepareBatch(s, [{ ...text('m1', 'hi'), metadata: { user_id: 'u-123' } }], newId);
    expect(s.metadata).toEqual({ user_id: 'u-123' });
  });
});

describe('splitInterruptBatch', () => {
  it('keeps only user texts, marks the first, and queues the rest in order', () => {
    const r = result('r1', 'tc', 'x');
    const { batch, rest } = splitInterruptBatch([r, text('a', 'stop'), text('b', 'and this')]);
    expect(batch.map((m) => (m.content.type === 'text' ? m.content.text : ''))).toEqual([
      '<interrupt>stop',
      'and this',
    ]);
    expect(rest).toEqual([r]);
  });
});

describe('synthetic inputs (docs/semantics.md §6–§10)', () => {
  const report = (id: string, callId: string, child: string, t: string): InputMessage => ({
    ...result(id, callId, t),
    synthetic: { type: 'thread_report', toolCallId: callId, childThreadId: child },
  });
  const event = (
    id: string,
    callId: string,
    t: string,
    extra: { associative?: boolean; final?: boolean } = {},
  ): InputMessage => ({
    ...result(id, callId, t),
    synthetic: { type: 'subscription_event', toolCallId: callId, ...extra },
  });

  it('inlines a report as a receive_event__injected pair tied to the spawn call', () => {
    const s = fresh({ eventTargets: new Map([['sp', 'spawn_thread']]) });
    const out = prepareBatch(s, [report('r1', 'sp', 'child-1', 'done')], () => 'inv-1');
    expect(out.append).toEqual([
      {
        messageId: 'r1',
        item: {
          kind: 'subscription_event',
          toolCallId: 'sp',
          childThreadId: 'child-1',
          invocation: { id: 'inv-1', name: 'receive_event__injected', args: { original_tool_call_id: 'sp' } },
          result: { id: 'inv-1', content: [{ type: 'text', text: 'done' }] },
        },
      },
    ]);
    expect(out.ready).toBe(true);
  });

  it('puts the interruption before an inline event when a call is pending (no deferral)', () => {
    const s = fresh({
      eventTargets: new Map([['sp', 'spawn_thread']]),
      pendingCall: { id: 'tc-1', name: 'x', passive: true },
    });
    const out = prepareBatch(s, [report('r1', 'sp', 'c', 'R')], newId);
    expect(out.append.map((a) => a.item.kind)).toEqual(['tool_result', 'subscription_event']);
    expect(out.interruptedCalls).toEqual(['tc-1']);
  });

  it('drops reports for unknown calls and events of unknown subscriptions', () => {
    const s = fresh();
    const out = prepareBatch(s, [report('r1', 'nonexistent-tc', 'c', 'R'), event('e1', 'nonexistent-tc', 'E')], newId);
    expect(out.dropped).toEqual([
      { id: 'r1', reason: 'unknown_call' },
      { id: 'e1', reason: 'unknown_subscription' },
    ]);
    expect(out.append).toEqual([]);
  });

  it('routes a non-associative event to a child and leaves history alone; final ends the subscription', () => {
    const s = fresh({ subscriptions: new Map([['tc-sub', 'watch']]), eventTargets: new Map([['tc-sub', 'watch']]) });
    const out = prepareBatch(s, [event('e1', 'tc-sub', 'tick', { final: true })], newId);
    expect(out.append).toEqual([]);
    expect(out.ready).toBe(false);
    expect(out.eventChildren).toEqual([
      { messageId: 'e1', subscriptionCallId: 'tc-sub', content: [{ type: 'text', text: 'tick' }] },
    ]);
    expect(s.subscriptions.size).toBe(0);
  });

  it('inlines an associative event without a child thread id', () => {
    const s = fresh({ subscriptions: new Map([['tc-cmd', 'run']]), eventTargets: new Map([['tc-cmd', 'run']]) });
    const out = prepareBatch(s, [event('e1', 'tc-cmd', 'line 1', { associative: true })], () => 'inv');
    expect(out.append[0]!.item).toMatchObject({
      kind: 'subscription_event',
      toolCallId: 'tc-cmd',
      result: { id: 'inv' },
    });
    expect(out.append[0]!.item).not.toHaveProperty('childThreadId');
  });

  it('defers reports while a non-passive call is pending, and releases them after its result', () => {
    const s = fresh({
      eventTargets: new Map([['sp', 'spawn_thread']]),
      pendingCall: { id: 'tc-1', name: 'build', passive: false },
    });
    expect(applyDeferral(s, [report('r1', 'sp', 'c', 'A'), result('x', 'tc-other', 'stale')])).toEqual([
      result('x', 'tc-other', 'stale'),
    ]);
    expect(applyDeferral(s, [report('r2', 'sp', 'c', 'B')])).toEqual([]);
    expect(s.deferred.map((m) => m.id)).toEqual(['r1', 'r2']);
    const now = applyDeferral(s, [result('res', 'tc-1', 'built')]);
    expect(now.map((m) => m.id)).toEqual(['res', 'r1', 'r2']);
    const out = prepareBatch(s, now, newId);
    expect(out.append.map((a) => a.item.kind)).toEqual(['tool_result', 'subscription_event', 'subscription_event']);
    expect(out.interruptedCalls).toEqual([]);
  });

  it('does not defer while a passive call is pending', () => {
    const s = fresh({ pendingCall: { id: 'z', name: 'sleep_until_event_or_input', passive: true } });
    const r = report('r1', 'sp', 'c', 'A');
    expect(applyDeferral(s, [r])).toEqual([r]);
  });
});
