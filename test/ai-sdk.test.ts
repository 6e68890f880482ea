/**
 * `aiSdkModel` with the AI SDK's own mock language model: part translation, prompt conversion, and a whole thread
 * driven by it on the real dev server.
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel, toAiSdkPrompt } from '../src/model/ai-sdk';
import type { ModelStreamPart } from '../src/model/provider';
import { greenBuildTool, render, startTestSystem, uid } from './helpers';

const usage = {
  inputTokens: { total: 12, noCache: 12, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 8, text: 8, reasoning: 0 },
};

function streamOf(parts: LanguageModelV3StreamPart[]) {
  return { stream: convertArrayToReadableStream(parts) };
}

const toolTurn: LanguageModelV3StreamPart[] = [
  { type: 'stream-start', warnings: [] },
  { type: 'reasoning-start', id: 'r1', providerMetadata: undefined },
  { type: 'reasoning-delta', id: 'r1', delta: 'need the build' },
  { type: 'reasoning-end', id: 'r1', providerMetadata: { anthropic: { signature: 'sig-1' } } },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: 'Checking ' },
  { type: 'text-delta', id: 't1', delta: 'now.' },
  { type: 'text-end', id: 't1' },
  { type: 'tool-input-start', id: 'call-1', toolName: 'get_build_status' },
  { type: 'tool-input-delta', id: 'call-1', delta: '{"build_id":' },
  { type: 'tool-input-delta', id: 'call-1', delta: '"42"}' },
  { type: 'tool-input-end', id: 'call-1' },
  { type: 'tool-call', toolCallId: 'call-1', toolName: 'get_build_status', input: '{"build_id":"42"}' },
  { type: 'finish', usage, finishReason: { unified: 'tool-calls', raw: 'tool_use' } as never },
];
const answerTurn: LanguageModelV3StreamPart[] = [
  { type: 'text-start', id: 't2' },
  { type: 'text-delta', id: 't2', delta: 'Build 42 is green.' },
  { type: 'text-end', id: 't2' },
  { type: 'finish', usage, finishReason: { unified: 'stop', raw: 'end_turn' } as never },
];

describe('aiSdkModel', () => {
  it('translates provider stream parts, keeping signed reasoning and streamed tool arguments', async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(toolTurn) });
    const parts: ModelStreamPart[] = [];
    const request = {
      threadId: 't',
      system: 'sys',
      messages: [{ role: 'user' as const, text: 'is 42 green?' }],
      tools: [],
    };
    for await (const p of aiSdkModel(mock).stream(request, new AbortController().signal)) parts.push(p);
    expect(parts).toEqual([
      { type: 'reasoning-delta', text: 'need the build' },
      { type: 'reasoning', text: 'need the build', providerMetadata: { anthropic: { signature: 'sig-1' } } },
      { type: 'text-delta', text: 'Checking ' },
      { type: 'text-delta', text: 'now.' },
      { type: 'tool-call-start', id: 'call-1', name: 'get_build_status' },
      { type: 'tool-call-delta', id: 'call-1', delta: '{"build_id":' },
      { type: 'tool-call-delta', id: 'call-1', delta: '"42"}' },
      { type: 'tool-call', id: 'call-1', name: 'get_build_status', input: '{"build_id":"42"}' },
      { type: 'finish', usage: { inputTokens: 12, outputTokens: 8, totalTokens: 20 } },
    ]);
  });

  it('surfaces a stream error part as a thrown error', async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf([
        { type: 'text-delta', id: 'x', delta: 'par' },
        { type: 'error', error: new Error('unexpected end of stream') },
      ]),
    });
    const it = aiSdkModel(mock).stream(
      { threadId: 't', system: '', messages: [], tools: [] },
      new AbortController().signal,
    );
    await expect(
      (async () => {
        for await (const _ of it) void _;
      })(),
    ).rejects.toThrow('unexpected end of stream');
  });

  it('builds a provider prompt with merged roles and tool results', () => {
    const prompt = toAiSdkPrompt({
      threadId: 't',
      system: 'be brief',
      tools: [],
      messages: [
        { role: 'user', text: 'hi' },
        { role: 'assistant', text: 'calling' },
        { role: 'tool_call', id: 'c1', name: 'x', args: { a: 1 } },
        { role: 'tool_result', id: 'c1', name: 'x', content: [{ type: 'text', text: 'done' }] },
      ],
    });
    expect(prompt).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'x', input: { a: 1 } },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'x', output: { type: 'text', value: 'done' } }],
      },
    ]);
  });

  it('drives a thread end to end on the dev server', async () => {
    const mock = new MockLanguageModelV3({ doStream: [streamOf(toolTurn), streamOf(answerTurn)] });
    const tool = greenBuildTool();
    const sys = await startTestSystem({ model: aiSdkModel(mock), tools: [tool] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('aisdk') });
      await thread.sendUserText('Is build 42 green?');
      await thread.waitForIdle({ settled: true });
      expect(render(await thread.history())).toEqual([
        'user: Is build 42 green?',
        'reasoning: need the build',
        'assistant: Checking now.',
        'call #1 get_build_status {"build_id":"42"}',
        'result #1: Build 42: green',
        'assistant: Build 42 is green.',
      ]);
      // The second request carried the signed reasoning back, and advertised the tool.
      const second = mock.doStreamCalls[1]!;
      expect(second.prompt[2]).toEqual({
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'need the build', providerOptions: { anthropic: { signature: 'sig-1' } } },
          { type: 'text', text: 'Checking now.' },
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'get_build_status', input: { build_id: '42' } },
        ],
      });
      expect(second.tools?.map((t) => t.name)).toEqual([
        'get_build_status',
        'spawn_thread',
        'report_to_parent',
        'close_thread',
        'send_message_to_child',
        'cancel_subscription',
        'sleep_until_event_or_input',
        'sleep',
        'sleep_until',
      ]);
    } finally {
      await sys.shutdown();
    }
  });
});
