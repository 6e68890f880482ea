/** The prepare rules as a pure function (reference spec §2.4, §5): scenarios 1–3 and 8–11 of §8. */
import { describe, expect, it } from 'vitest';
import { prepareBatch, splitInterruptBatch, type PrepareState } from '../../src/core/prepare';
import type { InputMessage } from '../../src/core/types';

const fresh = (over: Partial<PrepareState> = {}): PrepareState => ({
  closed: false,
  pendingCall: null,
  processedInputIds: new Set(),
  processedToolCalls: new Set(),
  subscriptions: new Map(),
  ...over,
});
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
    expect(prepareBatch(s, [text('m1', 'hello')])).toMatchObject({ ready: true, append: [{ messageId: 'm1', item: { kind: 'user', text: 'hello' } }] });
    expect(prepareBatch(s, [text('m1', 'hello')])).toEqual({ ready: false, append: [], dropped: [{ id: 'm1', reason: 'duplicate' }], interruptedCalls: [] });
  });

  it('drops everything for a closed thread without recording it', () => {
    const s = fresh({ closed: true });
    expect(prepareBatch(s, [text('m1', 'hi')]).dropped).toEqual([{ id: 'm1', reason: 'closed' }]);
    expect(s.processedInputIds.size).toBe(0);
  });

  it('accepts the result of the pending call and clears it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    const out = prepareBatch(s, [result('r1', 'tc-1', 'tool output')]);
    expect(out.append).toEqual([{ messageId: 'r1', item: { kind: 'tool_result', id: 'tc-1', content: [{ type: 'text', text: 'tool output' }] } }]);
    expect(s.pendingCall).toBeNull();
    expect(s.processedToolCalls.has('tc-1')).toBe(true);
  });

  it('interrupts a pending call with user text, then drops its late result and records it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    const out = prepareBatch(s, [text('m2', 'actually, never mind')]);
    expect(out.append.map((a) => [a.messageId, a.item])).toEqual([
      ['tc-1-interrupted', { kind: 'tool_result', id: 'tc-1', content: [{ type: 'text', text: 'Tool call interrupted by user' }] }],
      ['m2', { kind: 'user', text: 'actually, never mind' }],
    ]);
    expect(out.interruptedCalls).toEqual(['tc-1']);
    const late = prepareBatch(s, [result('r1', 'tc-1', 'late')]);
    expect(late.dropped).toEqual([{ id: 'r1', reason: 'already_processed' }]);
    expect(s.processedInputIds.has('r1')).toBe(true);
  });

  it('drops a result for a call that is not pending without recording it', () => {
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'x', passive: false } });
    expect(prepareBatch(s, [result('r9', 'tc-x', 'stale')]).dropped).toEqual([{ id: 'r9', reason: 'wrong_call' }]);
    expect(s.processedInputIds.has('r9')).toBe(false);
    expect(s.pendingCall?.id).toBe('tc-1');
  });

  it('tracks a subscription started by an accepted result', () => {
    const s = fresh({ pendingCall: { id: 'tc-sub', name: 'watch', passive: false } });
    prepareBatch(s, [result('r1', 'tc-sub', 'subscribed', { subscription: true })]);
    expect([...s.subscriptions]).toEqual([['tc-sub', 'watch']]);
  });

  it('applies metadata even from a duplicate', () => {
    const s = fresh({ processedInputIds: new Set(['m1']) });
    prepareBatch(s, [{ ...text('m1', 'hi'), metadata: { user_id: 'u-123' } }]);
    expect(s.metadata).toEqual({ user_id: 'u-123' });
  });
});

describe('splitInterruptBatch', () => {
  it('keeps only user texts, marks the first, and queues the rest in order', () => {
    const r = result('r1', 'tc', 'x');
    const { batch, rest } = splitInterruptBatch([r, text('a', 'stop'), text('b', 'and this')]);
    expect(batch.map((m) => (m.content.type === 'text' ? m.content.text : ''))).toEqual(['<interrupt>stop', 'and this']);
    expect(rest).toEqual([r]);
  });
});
