/**
 * Real provider clients (AI SDK Anthropic, OpenAI Responses and Chat, Bedrock Converse, OpenAI-compatible) against
 * loopback servers speaking each provider's wire protocol, through the slice's completion logic: what is committed,
 * which retries happen, and what the client sent back on the next turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompletionOutput, DEFAULT_COMPLETION_POLICY, runCompletion } from '../src/activities/completion';
import type { HistoryItem, ThreadEvent } from '../src/core/types';
import { SUMMARY_LEAD } from '../src/model/ai-sdk';
import { modelFromSpec } from '../src/model/registry';
import { defineTool, type Tool } from '../src/tools/tool';
import { FAST_POLICY, greenBuildTool, render, startTestSystem, uid } from './helpers';
import { anthropicDialect } from './wire/anthropic';
import { bedrockDialect } from './wire/bedrock';
import { openAiChatDialect } from './wire/openai-chat';
import { openAiResponsesDialect } from './wire/openai-responses';
import { type RecordedRequest, startWireServer, type WireDialect, type WireServer } from './wire/server';

interface ProviderCase {
  dialect: WireDialect;
  spec: string;
  env(url: string): Record<string, string>;
  /** Does the API stream reasoning? (Chat Completions does not.) */
  reasoning: boolean;
  /** The request asks for one tool call at a time. */
  singleToolCall?(body: Record<string, unknown>): void;
  /** The signed reasoning block went back to the provider on the next request. */
  reasoningEchoed?(body: Record<string, unknown>, signature: string): void;
}

const CASES: ProviderCase[] = [
  {
    dialect: anthropicDialect,
    spec: 'anthropic:claude-test',
    env: (url) => ({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: `${url}/v1` }),
    reasoning: true,
    singleToolCall: (body) => expect(body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true }),
    reasoningEchoed: (body, signature) => {
      const messages = body.messages as { role: string; content: { type: string; signature?: string }[] }[];
      const assistant = messages.find((m) => m.role === 'assistant')!;
      expect(assistant.content.map((c) => c.type)).toEqual(['thinking', 'tool_use']);
      expect(assistant.content[0]!.signature).toBe(signature);
    },
  },
  {
    dialect: openAiResponsesDialect,
    spec: 'openai:gpt-test',
    env: (url) => ({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${url}/v1` }),
    reasoning: true,
    singleToolCall: (body) => expect(body.parallel_tool_calls).toBe(false),
    reasoningEchoed: (body) => {
      const input = body.input as { type?: string; id?: string }[];
      const types = input.map((i) => i.type ?? 'message');
      // The reasoning item goes back (by reference: responses are stored server-side), before the function call.
      const reasoning = input.findIndex((i) => i.id === 'rs_1');
      expect(reasoning).toBeGreaterThanOrEqual(0);
      expect(types.indexOf('function_call')).toBeGreaterThan(reasoning);
    },
  },
  {
    dialect: bedrockDialect,
    spec: 'bedrock:anthropic.claude-test',
    env: (url) => ({
      AWS_ACCESS_KEY_ID: 'AKIDTEST',
      AWS_SECRET_ACCESS_KEY: 'test-secret',
      AWS_REGION: 'us-east-1',
      BEDROCK_BASE_URL: url,
    }),
    reasoning: true,
    reasoningEchoed: (body, signature) => {
      const messages = body.messages as { role: string; content: Record<string, unknown>[] }[];
      const assistant = messages.find((m) => m.role === 'assistant')!;
      expect(assistant.content[0]).toEqual({
        reasoningContent: { reasoningText: { text: 'check the suite first', signature } },
      });
      expect(Object.keys(assistant.content[1]!)).toEqual(['toolUse']);
    },
  },
  {
    dialect: openAiChatDialect,
    spec: 'openai-chat:gpt-test',
    env: (url) => ({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${url}/v1` }),
    reasoning: false,
    singleToolCall: (body) => expect(body.parallel_tool_calls).toBe(false),
  },
  {
    dialect: openAiChatDialect,
    spec: 'openai-compatible:local-model',
    env: (url) => ({ INFINITY_BASE_URL: `${url}/v1` }),
    reasoning: false,
  },
];

const runTests: Tool = defineTool<{ suite: string }>({
  name: 'run_tests',
  description: 'Runs a test suite; the result arrives later.',
  parameters: {
    type: 'object',
    properties: { suite: { type: 'string' } },
    required: ['suite'],
    additionalProperties: false,
  },
  execute: async () => undefined,
});

const tools = new Map([[runTests.name, runTests]]);

function strip(items: readonly { item: HistoryItem }[]): HistoryItem[] {
  return items.map((s) => s.item);
}

describe.each(CASES)('$spec over its wire protocol', (c) => {
  let server: WireServer;
  beforeAll(async () => {
    server = await startWireServer(c.dialect);
  });
  afterAll(async () => {
    await server.close();
  });

  async function complete(
    history: HistoryItem[],
  ): Promise<{ out: CompletionOutput; events: ThreadEvent[]; requests: RecordedRequest[] }> {
    const events: ThreadEvent[] = [];
    const first = server.requests.length;
    const out = await runCompletion({
      threadId: 't-1',
      sliceId: 's-1',
      system: 'You are a test agent.',
      history,
      tools,
      model: modelFromSpec(c.spec, { env: c.env(server.url) }),
      policy: { ...DEFAULT_COMPLETION_POLICY, ...FAST_POLICY },
      signal: new AbortController().signal,
      emit: (e) => events.push(e),
      toolContext: () => {
        throw new Error('no sync tools here');
      },
    });
    return { out, events, requests: server.requests.slice(first) };
  }

  const ask: HistoryItem[] = [{ kind: 'user', text: 'run the unit tests' }];

  it('streams text and records usage', async () => {
    server.reply({ kind: 'turn', turn: { text: ['All ', 'good', '.'], usage: { input: 120, output: 7 } } });
    const { out, events, requests } = await complete(ask);
    expect(strip(out.buffer.flushed)).toEqual([{ kind: 'assistant', text: 'All good.' }]);
    expect(out.error).toBeUndefined();
    expect(out.usage).toEqual({ inputTokens: 120, outputTokens: 7, totalTokens: 127 });
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text)).toEqual([
      'All ',
      'good',
      '.',
    ]);
    expect(requests).toHaveLength(1);
    expect(JSON.stringify(requests[0]!.body)).toContain('run the unit tests');
    expect(JSON.stringify(requests[0]!.body)).toContain('run_tests');
    c.singleToolCall?.(requests[0]!.body);
  });

  it('assembles a tool call from streamed argument fragments', async () => {
    server.reply({
      kind: 'turn',
      turn: {
        text: ['Running.'],
        toolCall: { id: 'call_1', name: 'run_tests', argChunks: ['{"su', 'ite": "un', 'it"}'] },
      },
    });
    const { out, events } = await complete(ask);
    expect(strip(out.buffer.flushed)).toEqual([
      { kind: 'assistant', text: 'Running.' },
      { kind: 'tool_call', id: 'call_1', name: 'run_tests', args: { suite: 'unit' } },
    ]);
    expect(out.asyncCall).toEqual({ id: 'call_1', name: 'run_tests', args: { suite: 'unit' }, passive: false });
    expect(
      events
        .filter((e) => e.type === 'thinking_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('Invoking tool: run_tests{"suite": "unit"}');
  });

  // The Chat Completions API streams no reasoning: the case exists only where the wire has it.
  if (c.reasoning)
    it('keeps signed reasoning and sends it back with the next request', async () => {
      const signature = `sig-${c.dialect.name}-42`;
      server.reply({
        kind: 'turn',
        turn: {
          reasoning: { text: 'check the suite first', signature },
          toolCall: { id: 'call_2', name: 'run_tests', argChunks: ['{"suite":"unit"}'] },
        },
      });
      const first = await complete(ask);
      const committed = strip(first.out.buffer.flushed);
      expect(committed.map((i) => i.kind)).toEqual(['reasoning', 'tool_call']);
      expect(committed[0]).toMatchObject({ kind: 'reasoning', text: 'check the suite first' });
      expect(JSON.stringify(committed[0])).toContain(c.dialect.name === 'openai-responses' ? 'rs_1' : signature);
      expect(first.events.some((e) => e.type === 'thinking_started')).toBe(true);

      server.reply({ kind: 'turn', turn: { text: ['Tests pass.'] } });
      const result: HistoryItem = { kind: 'tool_result', id: 'call_2', content: [{ type: 'text', text: '12 passed' }] };
      const second = await complete([...ask, ...committed, result]);
      expect(strip(second.out.buffer.flushed)).toEqual([{ kind: 'assistant', text: 'Tests pass.' }]);
      c.reasoningEchoed!(second.requests[0]!.body, signature);
      expect(JSON.stringify(second.requests[0]!.body)).toContain('12 passed');
    });

  it('waits out a 429 (honouring Retry-After) and then succeeds', async () => {
    server.reply(
      {
        kind: 'error',
        status: 429,
        message: 'Too many requests, please wait before trying again.',
        retryAfterSeconds: 1,
      },
      { kind: 'turn', turn: { text: ['after the wait'] } },
    );
    const { out, events, requests } = await complete(ask);
    expect(requests).toHaveLength(2);
    expect(strip(out.buffer.flushed)).toEqual([{ kind: 'assistant', text: 'after the wait' }]);
    expect(events.filter((e) => e.type === 'info')).toEqual([
      { threadId: 't-1', type: 'info', text: 'Stream error (rate limit), retrying after 1 seconds...' },
    ]);
  });

  it('discards a turn whose stream is cut mid-way and commits the retried one only', async () => {
    server.reply(
      { kind: 'cut', turn: { text: ['par', 'tial ', 'answer', ' never', ' finished'] }, afterFrames: 4 },
      { kind: 'turn', turn: { text: ['complete answer'] } },
    );
    const { out, events, requests } = await complete(ask);
    expect(requests).toHaveLength(2);
    expect(strip(out.buffer.flushed)).toEqual([{ kind: 'assistant', text: 'complete answer' }]);
    expect(events.filter((e) => e.type === 'info').map((e) => (e as { text: string }).text)).toEqual([
      'Stream error (unexpected end), retrying...',
    ]);
    expect(out.error).toBeUndefined();
  });

  it('answers malformed tool-call JSON with an error the model reads, then continues', async () => {
    server.reply(
      { kind: 'turn', turn: { toolCall: { id: 'call_3', name: 'run_tests', argChunks: ['{"suite": ', '"unit"'] } } },
      { kind: 'turn', turn: { text: ['Let me fix that.'] } },
    );
    const { out, requests } = await complete(ask);
    const items = strip(out.buffer.flushed);
    expect(items.map((i) => i.kind)).toEqual(['tool_call', 'tool_result', 'assistant']);
    expect(items[0]).toMatchObject({ kind: 'tool_call', id: 'call_3', name: 'run_tests' });
    const error = (items[1] as Extract<HistoryItem, { kind: 'tool_result' }>).content[0];
    expect(error).toMatchObject({ type: 'text' });
    expect((error as { text: string }).text).toMatch(
      /^Error: the arguments for tool 'run_tests' are not valid JSON: .*\{"suite": "unit"/,
    );
    expect(out.asyncCall).toBeUndefined();
    // The second request carried the error back to the model.
    expect(JSON.stringify(requests[1]!.body)).toContain('are not valid JSON');
  });
});

describe('a thread on a real provider client', () => {
  it('runs a tool round trip through the Anthropic wire protocol on the dev server, with usage per thread', async () => {
    const server = await startWireServer(anthropicDialect);
    const tool = greenBuildTool();
    server.reply(
      {
        kind: 'turn',
        turn: {
          reasoning: { text: 'look it up', signature: 'sig-e2e' },
          text: ['Checking.'],
          toolCall: { id: 'toolu_1', name: 'get_build_status', argChunks: ['{"build_id":', '"42"}'] },
          usage: { input: 300, output: 20 },
        },
      },
      { kind: 'turn', turn: { text: ['Build 42 ', 'is green.'], usage: { input: 400, output: 6 } } },
    );
    const model = modelFromSpec('anthropic:claude-sonnet-4-5', {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: `${server.url}/v1` },
    });
    const sys = await startTestSystem({ model, tools: [tool] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('anthropic') });
      await thread.sendUserText('Is build 42 green?');
      const status = await thread.waitForIdle({ settled: true });
      expect(render(await thread.history())).toEqual([
        'user: Is build 42 green?',
        'reasoning: look it up',
        'assistant: Checking.',
        'call #1 get_build_status {"build_id":"42"}',
        'result #1: Build 42: green',
        'assistant: Build 42 is green.',
      ]);
      expect(status.usage).toEqual({ inputTokens: 700, outputTokens: 26, totalTokens: 726 });
      expect(status.lastUsage).toEqual({ inputTokens: 400, outputTokens: 6, totalTokens: 406 });
      expect(server.requests).toHaveLength(2);
      expect(JSON.stringify(server.requests[1]!.body)).toContain('sig-e2e');
    } finally {
      await sys.shutdown();
      await server.close();
    }
  });
});

describe('modelFromSpec', () => {
  it('explains what is missing', () => {
    expect(() => modelFromSpec('anthropic:claude-sonnet-4-5', { env: {} })).toThrow(/needs ANTHROPIC_API_KEY/);
    expect(() => modelFromSpec('bedrock:x', { env: {} })).toThrow(
      /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK/,
    );
    expect(() => modelFromSpec('mistral:large', { env: {} })).toThrow(/unknown model provider 'mistral'/);
    expect(() => modelFromSpec('openai', { env: {} })).toThrow(/names no model/);
    expect(() => modelFromSpec('simulated', { env: { INFINITY_CONTEXT_WINDOW: 'lots' } })).toThrow(
      /INFINITY_CONTEXT_WINDOW must be a positive integer/,
    );
  });

  it('knows context windows and lets the environment override them', () => {
    expect(modelFromSpec('anthropic:claude-sonnet-4-5', { env: { ANTHROPIC_API_KEY: 'k' } }).contextWindow).toBe(
      200_000,
    );
    expect(
      modelFromSpec('openai:gpt-4o', { env: { OPENAI_API_KEY: 'k', INFINITY_CONTEXT_WINDOW: '5000' } }).contextWindow,
    ).toBe(5000);
    expect(
      modelFromSpec('openai-compatible:llama', { env: { INFINITY_BASE_URL: 'http://x' } }).contextWindow,
    ).toBeUndefined();
  });
});

describe('a compacted conversation on Bedrock', () => {
  it('starts with a user turn, then the summary', async () => {
    const server = await startWireServer(bedrockDialect);
    try {
      server.reply({ kind: 'turn', turn: { text: ['ok'] } });
      const history: HistoryItem[] = [
        { kind: 'assistant', text: '[Compacted conversation summary]\nwe fixed the build' },
        { kind: 'user', text: 'what next?' },
      ];
      const out = await runCompletion({
        threadId: 't-2',
        sliceId: 's-2',
        system: 'sys',
        history,
        tools: new Map(),
        model: modelFromSpec('bedrock:anthropic.claude-test', {
          env: { AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S', BEDROCK_BASE_URL: server.url },
        }),
        policy: { ...DEFAULT_COMPLETION_POLICY, ...FAST_POLICY },
        signal: new AbortController().signal,
        emit: () => undefined,
        toolContext: () => {
          throw new Error('unused');
        },
      });
      expect(strip(out.buffer.flushed)).toEqual([{ kind: 'assistant', text: 'ok' }]);
      const messages = server.requests[0]!.body.messages as { role: string; content: { text?: string }[] }[];
      expect(messages.map((m) => [m.role, m.content[0]!.text])).toEqual([
        ['user', SUMMARY_LEAD],
        ['assistant', '[Compacted conversation summary]\nwe fixed the build'],
        ['user', 'what next?'],
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('image results', () => {
  it('reach an image model as images and a text-only model as the placeholder', async () => {
    const history: HistoryItem[] = [
      { kind: 'user', text: 'show me the chart' },
      { kind: 'tool_call', id: 'call_img', name: 'run_tests', args: { suite: 'ui' } },
      {
        kind: 'tool_result',
        id: 'call_img',
        content: [
          { type: 'text', text: 'chart:' },
          { type: 'image', data: 'iVBORw0KGgoAAAANSUhEUg==', mediaType: 'image/png' },
        ],
      },
    ];
    const bodies: string[] = [];
    for (const [dialect, spec, env] of [
      [
        anthropicDialect,
        'anthropic:claude-test',
        (url: string) => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: `${url}/v1` }),
      ],
      [openAiChatDialect, 'openai-compatible:local-model', (url: string) => ({ INFINITY_BASE_URL: `${url}/v1` })],
    ] as const) {
      const server = await startWireServer(dialect);
      try {
        server.reply({ kind: 'turn', turn: { text: ['seen'] } });
        await runCompletion({
          threadId: 't-3',
          sliceId: 's-3',
          system: 'sys',
          history,
          tools,
          model: modelFromSpec(spec, { env: env(server.url) }),
          policy: { ...DEFAULT_COMPLETION_POLICY, ...FAST_POLICY },
          signal: new AbortController().signal,
          emit: () => undefined,
          toolContext: () => {
            throw new Error('unused');
          },
        });
        bodies.push(JSON.stringify(server.requests[0]!.body));
      } finally {
        await server.close();
      }
    }
    expect(bodies[0]).toContain('iVBORw0KGgoAAAANSUhEUg==');
    expect(bodies[1]).not.toContain('iVBORw0KGgoAAAANSUhEUg==');
    expect(bodies[1]).toContain('[image omitted: the current model does not support image inputs]');
  });
});
