/**
 * The original runtime's event-processor scenarios (`crates/infinity-agent-core/src/event_processor.rs`, its
 * `prepare_input` tests) that `prepare.test.ts` does not already cover, run against our prepare rules
 * (docs/semantics.md §1–§14). Each keeps the reference's expected outcome unless docs/decisions.md records a deliberate
 * difference; then it asserts ours and names the decision.
 */
import { describe, expect, it } from 'vitest';
import { applyDeferral, prepareBatch } from '../../src/core/prepare';
import { freshPrepareState } from './prepare-state';
import type { InputMessage, SyntheticKind } from '../../src/core/types';

const fresh = freshPrepareState;
const ids = () => {
  let n = 0;
  return () => `uuid-${++n}`;
};
const synthetic = (id: string, callId: string, text: string, syn: SyntheticKind): InputMessage => ({
  id,
  threadId: 'thread-1',
  content: { type: 'tool_result', toolCallId: callId, content: [{ type: 'text', text }] },
  synthetic: syn,
});
const report = (id: string, callId: string, text: string) =>
  synthetic(id, callId, text, { type: 'thread_report', toolCallId: callId, childThreadId: 'child-1' });
const event = (id: string, callId: string, text: string, associative: boolean) =>
  synthetic(id, callId, text, { type: 'subscription_event', toolCallId: callId, associative, final: false });

describe('reference event-processor scenarios not covered in prepare.test.ts', () => {
  it('thread_report_tool_interruption: a report for the pending call itself answers it as interrupted, then inlines the report', () => {
    // History [user "subscribe", call tc-sub] with tc-sub unanswered; the report is tied to tc-sub (reference §8 scenario 13).
    const s = fresh({
      pendingCall: { id: 'tc-sub', name: 'subscribe_tool', passive: false },
      eventTargets: new Map([['tc-sub', 'subscribe_tool']]),
    });
    const out = prepareBatch(s, [report('msg-2', 'tc-sub', 'thread report data')], ids());
    expect(out.ready).toBe(true);
    expect(out.append).toEqual([
      {
        messageId: 'tc-sub-interrupted',
        item: { kind: 'tool_result', id: 'tc-sub', content: [{ type: 'text', text: 'Tool call interrupted by user' }] },
      },
      {
        messageId: 'msg-2',
        item: {
          kind: 'subscription_event',
          toolCallId: 'tc-sub',
          childThreadId: 'child-1',
          invocation: { id: 'uuid-1', name: 'receive_event__injected', args: { original_tool_call_id: 'tc-sub' } },
          result: { id: 'uuid-1', content: [{ type: 'text', text: 'thread report data' }] },
        },
      },
    ]);
    expect(out.interruptedCalls).toEqual(['tc-sub']);
    expect(s.pendingCall).toBeNull();
    // The call's real result, arriving later, is dropped and recorded (reference §5.1).
    const late = prepareBatch(
      s,
      [
        {
          id: 'r-late',
          threadId: 'thread-1',
          content: { type: 'tool_result', toolCallId: 'tc-sub', content: [{ type: 'text', text: 'late' }] },
        },
      ],
      ids(),
    );
    expect(late.dropped).toEqual([{ id: 'r-late', reason: 'already_processed' }]);
  });

  it('thread_report_tool_interruption, in the workflow: a non-passive pending call holds the report back instead (reference §5.3, local driver)', () => {
    const s = fresh({
      pendingCall: { id: 'tc-sub', name: 'subscribe_tool', passive: false },
      eventTargets: new Map([['tc-sub', 'subscribe_tool']]),
    });
    expect(applyDeferral(s, [report('msg-2', 'tc-sub', 'thread report data')])).toEqual([]);
    expect(s.deferred.map((m) => m.id)).toEqual(['msg-2']);
  });

  it('subscription_event_spawned_thread: a redelivered threaded event is a duplicate, not a second event child (decision 19)', () => {
    // The reference keeps no dedup record for a threaded event and spawns another child for a redelivery (§4.3 step 5).
    const s = fresh({
      subscriptions: new Map([['tc-sub', 'subscribe_tool']]),
      eventTargets: new Map([['tc-sub', 'subscribe_tool']]),
    });
    const first = prepareBatch(s, [event('msg-2', 'tc-sub', 'event payload', false)], ids());
    expect(first).toMatchObject({
      ready: false,
      append: [],
      eventChildren: [{ messageId: 'msg-2', subscriptionCallId: 'tc-sub' }],
    });
    const again = prepareBatch(s, [event('msg-2', 'tc-sub', 'event payload', false)], ids());
    expect(again).toEqual({
      ready: false,
      append: [],
      dropped: [{ id: 'msg-2', reason: 'duplicate' }],
      interruptedCalls: [],
      eventChildren: [],
    });
  });

  it('subscription_event_spawned_thread with a call pending: the event child is spawned, the pending call untouched (reference §8 scenario 16)', () => {
    const s = fresh({
      pendingCall: { id: 'tc-other', name: 'build', passive: false },
      subscriptions: new Map([['tc-sub', 'subscribe_tool']]),
      eventTargets: new Map([['tc-sub', 'subscribe_tool']]),
    });
    const out = prepareBatch(s, [event('msg-2', 'tc-sub', 'event payload', false)], ids());
    expect(out.eventChildren).toEqual([
      { messageId: 'msg-2', subscriptionCallId: 'tc-sub', content: [{ type: 'text', text: 'event payload' }] },
    ]);
    expect(out.append).toEqual([]);
    expect(out.interruptedCalls).toEqual([]);
    expect(s.pendingCall).toEqual({ id: 'tc-other', name: 'build', passive: false });
  });

  it('subscription_event_tool_interruption: an event for a call that is still pending is discarded (decision 18)', () => {
    // The reference spawns an event child because tc-sub is in history; a call whose result has not started a
    // subscription is not an active subscription here, and RAP has runtimes discard such events (decision 18).
    const s = fresh({ pendingCall: { id: 'tc-sub', name: 'subscribe_tool', passive: false } });
    const out = prepareBatch(s, [event('msg-2', 'tc-sub', 'event payload', false)], ids());
    expect(out).toEqual({
      ready: false,
      append: [],
      dropped: [{ id: 'msg-2', reason: 'unknown_subscription' }],
      interruptedCalls: [],
      eventChildren: [],
    });
    expect(s.pendingCall?.id).toBe('tc-sub');
    expect(s.processedInputIds.has('msg-2')).toBe(false);
  });

  it('associative_subscription_event_tool_interruption: the same for an associative event (decision 18)', () => {
    // Reference: interrupted result for tc-cmd, then the inline event. Ours: tc-cmd is no active subscription yet.
    const s = fresh({ pendingCall: { id: 'tc-cmd', name: 'execute_command', passive: false } });
    const out = prepareBatch(s, [event('msg-2', 'tc-cmd', 'build output chunk\n[exit code: 0]', true)], ids());
    expect(out.dropped).toEqual([{ id: 'msg-2', reason: 'unknown_subscription' }]);
    expect(out.append).toEqual([]);
    expect(s.pendingCall?.id).toBe('tc-cmd');
  });

  it('associative_subscription_event_tool_interruption, for an active subscription: the pending call is interrupted before the event', () => {
    // The reference's shape where the subscription is active and another call is pending (step mode: no deferral).
    const s = fresh({
      pendingCall: { id: 'tc-1', name: 'some_tool', passive: false },
      subscriptions: new Map([['tc-cmd', 'execute_command']]),
      eventTargets: new Map([['tc-cmd', 'execute_command']]),
    });
    const out = prepareBatch(s, [event('msg-2', 'tc-cmd', 'build output chunk\n[exit code: 0]', true)], ids());
    expect(out.append.map((a) => [a.messageId, a.item.kind])).toEqual([
      ['tc-1-interrupted', 'tool_result'],
      ['msg-2', 'subscription_event'],
    ]);
    expect(out.append[1]!.item).toMatchObject({
      toolCallId: 'tc-cmd',
      result: { content: [{ type: 'text', text: 'build output chunk\n[exit code: 0]' }] },
    });
    expect(out.append[1]!.item).not.toHaveProperty('childThreadId');
    expect(out.interruptedCalls).toEqual(['tc-1']);
  });

  it('metadata_is_updated_before_processing: a first input sets the root metadata', () => {
    const s = fresh();
    expect(s.metadata).toBeUndefined();
    prepareBatch(
      s,
      [{ id: 'msg-1', threadId: 'thread-1', content: { type: 'text', text: 'hi' }, metadata: { user_id: 'u-123' } }],
      ids(),
    );
    expect(s.metadata).toEqual({ user_id: 'u-123' });
  });

  it('closed_thread_ignores: a closed thread changes no metadata either (reference §5.4)', () => {
    const s = fresh({ closed: true, metadata: { user_id: 'before' } });
    const out = prepareBatch(
      s,
      [{ id: 'msg-1', threadId: 'thread-1', content: { type: 'text', text: 'hello' }, metadata: { user_id: 'after' } }],
      ids(),
    );
    expect(out.dropped).toEqual([{ id: 'msg-1', reason: 'closed' }]);
    expect(s.metadata).toEqual({ user_id: 'before' });
  });

  it('oauth_required / user_choice: a prompt never reaches history; the workflow takes it before the prepare rules (decisions 13, 39)', () => {
    // The reference answers OAuthRequired / UserChoiceRequired from prepare_input without touching history. Ours are
    // control inputs of the workflow (workflows/control-inputs.ts); one that reached the prepare rules is refused.
    const s = fresh({ pendingCall: { id: 'tc-1', name: 'deploy', passive: false } });
    const prompt: InputMessage = {
      id: 'oauth-1',
      threadId: 'thread-1',
      content: { type: 'tool_result', toolCallId: 'tc-1', content: [] },
      synthetic: { type: 'prompt', toolCallId: 'tc-1', prompt: { kind: 'oauth', authUrl: 'https://example.com/auth' } },
    };
    const out = prepareBatch(s, [prompt], ids());
    expect(out).toEqual({
      ready: false,
      append: [],
      dropped: [{ id: 'oauth-1', reason: 'malformed' }],
      interruptedCalls: [],
      eventChildren: [],
    });
    expect(s.pendingCall?.id).toBe('tc-1');
  });

  it('a stale result together with a held-back event runs no completion (reference §8 scenario 49)', () => {
    const s = fresh({
      pendingCall: { id: 'tc-1', name: 'build', passive: false },
      eventTargets: new Map([['sp', 'spawn_thread']]),
    });
    const stale: InputMessage = {
      id: 'r-x',
      threadId: 'thread-1',
      content: { type: 'tool_result', toolCallId: 'tc-other', content: [{ type: 'text', text: 'stale' }] },
    };
    const now = applyDeferral(s, [report('rep-1', 'sp', 'A'), stale]);
    const out = prepareBatch(s, now, ids());
    expect(out).toEqual({
      ready: false,
      append: [],
      dropped: [{ id: 'r-x', reason: 'wrong_call' }],
      interruptedCalls: [],
      eventChildren: [],
    });
    expect(s.deferred.map((m) => m.id)).toEqual(['rep-1']);
  });
});
