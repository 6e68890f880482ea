/**
 * The readable signal payloads (signals by kind) carry every message whole: reading back what a client or a thread
 * sends gives the very message, for every kind and shape of input (issue 25 §1). Generated messages, no server.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inputOfPayload, readablePayload, signalNameOf } from '../../src/core/readable-input';
import type { DisplaySegment, InputMessage, StagedRef, SyntheticKind, ToolResultContent } from '../../src/core/types';
import { validateKindSignal } from '../../src/core/validate';

const id = fc.string({ minLength: 1, maxLength: 12 });
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constant(''));
const staged: fc.Arbitrary<StagedRef> = fc.record({
  id: fc.uuid(),
  sha256: fc.stringMatching(/^[0-9a-f]{64}$/),
  bytes: fc.nat(),
});
const textBlock: fc.Arbitrary<ToolResultContent> = fc.record(
  { type: fc.constant('text' as const), text, staged },
  { requiredKeys: ['type', 'text'] },
);
const imageBlock: fc.Arbitrary<ToolResultContent> = fc.record({
  type: fc.constant('image' as const),
  data: fc.base64String({ maxLength: 40 }),
  mediaType: fc.constantFrom('image/png', 'image/jpeg'),
});
const blocks = fc.array(fc.oneof(textBlock, imageBlock), { maxLength: 3 });
const display: fc.Arbitrary<DisplaySegment[]> = fc.array(
  fc.oneof(
    fc.record({ type: fc.constant('text' as const), content: text }),
    fc.record({ type: fc.constant('diff' as const), content: fc.record({ path: text, patch: text }) }),
    fc.record({
      type: fc.constant('image' as const),
      content: fc.record({ data: fc.base64String({ maxLength: 20 }), mediaType: fc.constant('image/png') }),
    }),
  ),
  { maxLength: 2 },
);
const metadata = fc.dictionary(
  fc.string({ maxLength: 8 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  { maxKeys: 3 },
);
/** The optional fields every kind may carry. */
const extras = fc.record({ metadata, subscription: fc.boolean(), displayAs: display }, { requiredKeys: [] });

const userText = fc
  .tuple(
    id,
    id,
    fc.record({ type: fc.constant('text' as const), text, staged }, { requiredKeys: ['type', 'text'] }),
    extras,
  )
  .map(([mid, threadId, content, rest]): InputMessage => ({ id: mid, threadId, content, ...rest }));

/** A tool result with `synthetic` (or none) whose call id matches the content's, as clients and threads send them. */
const result = (synthetic: fc.Arbitrary<((callId: string) => SyntheticKind) | undefined>) =>
  fc.tuple(id, id, id, blocks, synthetic, extras).map(([mid, threadId, callId, content, syn, rest]): InputMessage => ({
    id: mid,
    threadId,
    content: { type: 'tool_result', toolCallId: callId, content },
    ...(syn !== undefined && { synthetic: syn(callId) }),
    ...rest,
  }));

const event = fc
  .record({ associative: fc.boolean(), final: fc.boolean() }, { requiredKeys: [] })
  .map((flags) => (toolCallId: string): SyntheticKind => ({ type: 'subscription_event', toolCallId, ...flags }));
const report = fc.oneof(
  id.map((child) => (toolCallId: string): SyntheticKind => ({
    type: 'thread_report',
    toolCallId,
    childThreadId: child,
  })),
  fc.constant((toolCallId: string): SyntheticKind => ({ type: 'parent_message', toolCallId })),
);
const prompt = fc.oneof(
  fc.record({ kind: fc.constant('oauth' as const), authUrl: fc.webUrl() }),
  fc.record({
    kind: fc.constant('user_choice' as const),
    id,
    prompt: text,
    choices: fc.array(text, { minLength: 1, maxLength: 3 }),
    default: fc.constant(0),
    responseUrl: fc.webUrl(),
  }),
);
const control = fc.oneof(
  fc.constant((): SyntheticKind => ({ type: 'compaction' })),
  fc.constant((): SyntheticKind => ({ type: 'compaction_complete' })),
  prompt.map((p) => (toolCallId: string): SyntheticKind => ({ type: 'prompt', toolCallId, prompt: p })),
);

const message: fc.Arbitrary<InputMessage> = fc.oneof(
  userText,
  result(fc.constant(undefined)),
  result(event),
  result(report),
  result(control),
);

/** What the thread reads from a signal of `m`'s kind: the payload after Temporal's JSON round trip. */
function readBack(m: InputMessage, toolName?: string) {
  const sent = JSON.parse(JSON.stringify(readablePayload(m, toolName))) as unknown;
  return { sent, read: validateKindSignal(signalNameOf(m), sent) };
}

/** `m` as the thread reads it: an event's absent `associative`/`final` mean false. */
function asRead(m: InputMessage): InputMessage {
  const copy = JSON.parse(JSON.stringify(m)) as InputMessage;
  if (copy.synthetic?.type === 'subscription_event') {
    copy.synthetic.associative ??= false;
    copy.synthetic.final ??= false;
  }
  return copy;
}

describe('readable signal payloads', () => {
  it('read back as the message they carry, for every kind and shape', () => {
    fc.assert(
      fc.property(message, fc.option(id, { nil: undefined }), (m, toolName) => {
        const { read } = readBack(m, toolName);
        expect(read.ok).toBe(true);
        if (read.ok) expect(asRead(read.value)).toEqual(asRead(m));
      }),
      { numRuns: 3_000 },
    );
  });

  it('keep the staged reference of a tool result, an event and a report (the issue 25 defect)', () => {
    const ref: StagedRef = { id: 'blob-1', sha256: 'a'.repeat(64), bytes: 1_048_576 };
    const block: ToolResultContent = { type: 'text', text: 'x'.repeat(200), staged: ref };
    const base = {
      id: 'm',
      threadId: 't',
      content: { type: 'tool_result' as const, toolCallId: 'c', content: [block] },
    };
    for (const m of [
      base,
      { ...base, synthetic: { type: 'subscription_event' as const, toolCallId: 'c', associative: true, final: false } },
      { ...base, synthetic: { type: 'thread_report' as const, toolCallId: 'c', childThreadId: 'child' } },
    ] satisfies InputMessage[]) {
      const { sent, read } = readBack(m, 'watch');
      expect(JSON.stringify(sent)).toContain('"staged"');
      expect(read.ok && read.value.content.type === 'tool_result' && read.value.content.content[0]).toEqual(block);
    }
  });

  it('stay readable where nothing would be lost: the text or the tool name first', () => {
    const m: InputMessage = {
      id: 'm',
      threadId: 't',
      content: { type: 'tool_result', toolCallId: 'c', content: [{ type: 'text', text: 'build 7 passed' }] },
    };
    expect(Object.keys(readablePayload(m, 'get_build_status')).slice(0, 2)).toEqual(['tool', 'text']);
    const user: InputMessage = { id: 'u', threadId: 't', content: { type: 'text', text: 'hello' } };
    expect(Object.keys(readablePayload(user))[0]).toBe('text');
    // A payload the readable form cannot carry travels whole, its content first.
    const whole = readablePayload({
      ...m,
      content: {
        type: 'tool_result',
        toolCallId: 'c',
        content: [{ type: 'text', text: 'p', staged: { id: 'b', sha256: 'f'.repeat(64), bytes: 9 } }],
      },
    });
    expect(Object.keys(whole)[0]).toBe('content');
    expect(inputOfPayload('tool_result', whole)).toBe(whole);
  });
});
