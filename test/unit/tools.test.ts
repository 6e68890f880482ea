import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/tools/tool';
import { subscriptionEvent, toolResult } from '../../src/tools/messages';
import { validateInputMessage } from '../../src/core/validate';

describe('defineTool', () => {
  const tool = defineTool({
    name: 'get_build_status',
    description: 'Look up a CI build',
    parameters: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
    execute() {},
  });

  it('validates arguments against the JSON schema with readable errors', () => {
    expect(tool.validate({ build_id: '42' })).toBeUndefined();
    expect(tool.validate({})).toBe("arguments must have required property 'build_id'");
    expect(tool.validate({ build_id: 1 })).toBe('arguments/build_id must be string');
  });

  it('rejects bad names and bad schemas at definition time', () => {
    expect(() =>
      defineTool({ name: 'has space', description: '', parameters: { type: 'object' }, execute() {} }),
    ).toThrow(/must match/);
    expect(() =>
      defineTool({
        name: 'x',
        description: '',
        parameters: { type: 'object', properties: { a: { type: 'nonsense' } } },
        execute() {},
      }),
    ).toThrow(/invalid parameters schema/);
  });
});

describe('message builders', () => {
  it('build valid inputs with stable dedup ids for results and fresh ids for events', () => {
    const call = { threadId: 't', toolCallId: 'tc-1' };
    const r = toolResult(call, 'done');
    expect(r).toEqual({
      id: 'tc-1-result',
      threadId: 't',
      content: { type: 'tool_result', toolCallId: 'tc-1', content: [{ type: 'text', text: 'done' }] },
    });
    expect(validateInputMessage(r).ok).toBe(true);
    const e1 = subscriptionEvent(call, 'tick', { associative: true });
    const e2 = subscriptionEvent(call, 'tick', { associative: true });
    expect(e1.id).not.toBe(e2.id);
    expect(e1.synthetic).toEqual({ type: 'subscription_event', toolCallId: 'tc-1', associative: true, final: false });
  });

  it('reports what is wrong with a malformed input', () => {
    expect(validateInputMessage({ id: '', threadId: 't', content: { type: 'text', text: 'x' } })).toEqual({
      ok: false,
      error: 'input.id must be a non-empty string',
    });
    expect(
      validateInputMessage({
        id: 'a',
        threadId: 't',
        content: { type: 'tool_result', toolCallId: 'c', content: [{ type: 'audio' }] },
      }),
    ).toEqual({
      ok: false,
      error: "input.content.content[0].type must be 'text' or 'image'",
    });
  });
});
