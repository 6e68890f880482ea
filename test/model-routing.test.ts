/**
 * Model routing (issue 40 §4) on the real dev server: an agent's models are an ordered list, and a round whose model
 * is unavailable past its retry policy runs on the next one. The models are real provider clients (AI SDK Anthropic
 * and OpenAI Chat) against loopback servers speaking each provider's wire protocol, so a 529 `overloaded_error` is
 * what Anthropic sends. Checked: who answers, what each server saw, the model recorded with the slice, the spend priced
 * with the model that served, the live event, and what does not route.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AgentDefinition, defineAgent } from '../src/activities/agents';
import { AgentClient } from '../src/client/agent-client';
import { sliceIdFor } from '../src/core/ids';
import type { SliceResult } from '../src/core/slice-protocol';
import type { HistoryItem, ThreadEvent } from '../src/core/types';
import type { ModelProvider } from '../src/model/provider';
import { modelFromSpec } from '../src/model/registry';
import { SqliteConversationStore } from '../src/store/sqlite';
import { defineTool } from '../src/tools/tool';
import { type AgentWorker, createAgentWorker } from '../src/worker/create-worker';
import { Client } from '@temporalio/client';
import { FAST_POLICY, render, uid } from './helpers';
import { anthropicDialect } from './wire/anthropic';
import { openAiChatDialect } from './wire/openai-chat';
import { type RecordedRequest, startWireServer, type WireServer } from './wire/server';

/** Three attempts per round (one try, two retries), 20 ms apart. */
const POLICY = { ...FAST_POLICY, transientWaitMs: 20, maxRetries: 2 };
const ATTEMPTS = POLICY.maxRetries + 1;

const lookUp = defineTool<{ what: string }>({
  name: 'look_up',
  description: 'Looks something up, inline',
  parameters: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
  sync: true,
  execute: (args) => `found ${args.what}`,
});

let first: WireServer;
let second: WireServer;
let modelA: ModelProvider;
let modelB: ModelProvider;
let store: SqliteConversationStore;
let connection: NativeConnection;
let worker: AgentWorker;
let client: AgentClient;
const seen: ThreadEvent[] = [];

beforeAll(async () => {
  first = await startWireServer(anthropicDialect);
  second = await startWireServer(openAiChatDialect);
  modelA = modelFromSpec('anthropic:claude-test', {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: `${first.url}/v1` },
  });
  modelB = modelFromSpec('openai-chat:gpt-test', {
    env: { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${second.url}/v1` },
  });
  // Each model as a route (`{ model }`): defineAgent takes an AI SDK provider object itself for a route, since it has a
  // `model` property of its own.
  const agents: AgentDefinition[] = [
    defineAgent({
      name: 'routed',
      model: [{ model: modelA }, { model: modelB }],
      tools: [lookUp],
      completionPolicy: POLICY,
    }),
    defineAgent({ name: 'single', model: [{ model: modelA }], completionPolicy: POLICY }),
    // The first model's key is closed longer than this agent waits for it (1 s): the next model serves at once.
    defineAgent({
      name: 'impatient',
      model: [{ model: modelA, limits: { key: 'routing-impatient', rpm: 6_000, reserve: 0 } }, { model: modelB }],
      completionPolicy: POLICY,
      routing: { closedForMs: 1_000 },
    }),
    // The same, waiting up to the default minute: a short closure keeps the first model (the workflow waits).
    defineAgent({
      name: 'patient',
      model: [{ model: modelA, limits: { key: 'routing-patient', rpm: 6_000, reserve: 0 } }, { model: modelB }],
      completionPolicy: POLICY,
    }),
  ];
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  store = new SqliteConversationStore(join(inject('scratchDir'), `store-${randomUUID()}.sqlite`));
  const taskQueue = `test-${randomUUID()}`;
  worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    // No `model` of its own: an AI SDK provider object is taken for a route there too (see above).
    defaultAgent: 'routed',
    agents,
    onEvent: (e) => seen.push(e),
    completionPolicy: POLICY,
    // Exact ids: the first model is dear, the second cheap, so the spend tells which priced the tokens.
    prices: { [modelA.id]: { input: 100, output: 1_000 }, [modelB.id]: { input: 1, output: 10 } },
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  void worker.run();
  client = new AgentClient({ client: new Client({ connection }), taskQueue, store });
});

afterAll(async () => {
  await worker?.shutdown();
  await connection?.close();
  await store?.close();
  await first?.close();
  await second?.close();
});

/** Runs one user text on a new thread of `agent` to the end of its turn. */
async function turn(agent: string, text: string, threadId = uid(agent)) {
  const from = { first: first.requests.length, second: second.requests.length, events: seen.length };
  const thread = await client.startThread({ threadId, agent });
  await thread.sendUserText(text);
  const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  const history = await thread.history();
  return {
    threadId,
    status,
    history,
    toFirst: first.requests.slice(from.first),
    toSecond: second.requests.slice(from.second),
    info: seen
      .slice(from.events)
      .filter((e): e is Extract<ThreadEvent, { type: 'info' }> => e.type === 'info' && e.threadId === threadId)
      .map((e) => e.text),
  };
}

/** The thread's committed slices, in order (slice ids count from 0; a thread here has only a few). */
async function slices(threadId: string): Promise<SliceResult[]> {
  const out: SliceResult[] = [];
  for (let n = 0; n < 6; n++) {
    const s = await store.findSlice(threadId, sliceIdFor(threadId, n));
    if (s) out.push(s);
  }
  return out;
}

const spendOf = async (threadId: string) => (await store.budgets([{ scope: 'thread', key: threadId }]))[0]!.spend;
const overloaded = { kind: 'error', status: 529, message: 'Overloaded' } as const;
const lastAssistant = (items: HistoryItem[]) => items.filter((i) => i.kind === 'assistant').at(-1);
const chatMessages = (r: RecordedRequest) => r.body.messages as { role: string; content?: unknown }[];

describe('model routing', () => {
  it('serves the round from the next model when the first is overloaded past its retries', async () => {
    first.reply(...Array.from({ length: ATTEMPTS }, () => overloaded));
    second.reply({ kind: 'turn', turn: { text: ['from the ', 'second model'], usage: { input: 40, output: 8 } } });
    const t = await turn('routed', 'hello there');

    expect(t.status.lastError).toBeUndefined();
    expect(render(t.history)).toEqual(['user: hello there', 'assistant: from the second model']);
    // Each model's requests reached its own server: the retries on the first, then one on the second.
    expect(t.toFirst).toHaveLength(ATTEMPTS);
    expect(t.toFirst.every((r) => r.path === '/v1/messages')).toBe(true);
    expect(t.toSecond).toHaveLength(1);
    expect(t.toSecond[0]!.path).toBe('/v1/chat/completions');
    expect(chatMessages(t.toSecond[0]!).filter((m) => m.role === 'user')).toHaveLength(1);
    expect(JSON.stringify(chatMessages(t.toSecond[0]!))).toContain('hello there');
    // The slice records the model that served it.
    const [slice] = await slices(t.threadId);
    expect(slice!.agent).toMatchObject({ name: 'routed', model: modelB.id });
    // Its tokens are priced with the second model's prices.
    const spend = await spendOf(t.threadId);
    expect(spend).toMatchObject({ inputTokens: 40, outputTokens: 8, slices: 1, unpricedSlices: 0 });
    expect(spend.usd).toBeCloseTo((40 * 1 + 8 * 10) / 1e6, 12);
    expect(t.info).toContain(
      `model ${modelA.id} unavailable (overloaded, HTTP 529; ${ATTEMPTS} attempts): routed to ${modelB.id}`,
    );

    // The next slice starts on the first model again.
    first.reply({ kind: 'turn', turn: { text: ['the first is back'], usage: { input: 10, output: 2 } } });
    const thread = client.thread(t.threadId);
    await thread.sendUserText('again');
    await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
    expect(lastAssistant(await thread.history())).toEqual({ kind: 'assistant', text: 'the first is back' });
    expect((await slices(t.threadId)).map((s) => s.agent?.model)).toEqual([modelB.id, modelA.id]);
  });

  it('keeps the rounds a model served and runs the later ones on the model that took over', async () => {
    // Round 0 on the first model: a sync tool call. Round 1: the first is overloaded; the second answers.
    first.reply(
      {
        kind: 'turn',
        turn: {
          toolCall: { id: 'toolu_1', name: 'look_up', argChunks: ['{"what":"the build"}'] },
          usage: { input: 30, output: 6 },
        },
      },
      ...Array.from({ length: ATTEMPTS }, () => overloaded),
    );
    second.reply({ kind: 'turn', turn: { text: ['the build is green'], usage: { input: 50, output: 4 } } });
    const t = await turn('routed', 'check the build');

    expect(t.status.lastError).toBeUndefined();
    // Nothing duplicated: the served round's call and result once, then the second model's reply.
    expect(render(t.history)).toEqual([
      'user: check the build',
      'call #1 look_up {"what":"the build"}',
      'result #1: found the build',
      'assistant: the build is green',
    ]);
    expect(t.toFirst).toHaveLength(1 + ATTEMPTS);
    expect(t.toSecond).toHaveLength(1);
    // The second model got the conversation so far, the first model's tool call and its result included.
    const sent = chatMessages(t.toSecond[0]!);
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    const [slice] = await slices(t.threadId);
    expect(slice!.agent?.model).toBe(modelB.id);
    expect(slice!.usage).toMatchObject({ inputTokens: 80, outputTokens: 10 });
    // Each model's round priced with its own prices.
    const spend = await spendOf(t.threadId);
    expect(spend).toMatchObject({ inputTokens: 80, outputTokens: 10, slices: 1 });
    expect(spend.usd).toBeCloseTo((30 * 100 + 6 * 1_000 + 50 * 1 + 4 * 10) / 1e6, 12);
    // Split by model (`usage --by-model`): each model its own rounds' tokens and money; the slice counts for both.
    const byModel = await store.spendByModel({ scope: 'thread', key: t.threadId });
    expect(byModel.map((m) => [m.model, m.inputTokens, m.outputTokens, m.slices])).toEqual(
      [
        [modelA.id, 30, 6, 1],
        [modelB.id, 50, 4, 1],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
    const usd = Object.fromEntries(byModel.map((m) => [m.model, m.usd]));
    expect(usd[modelA.id]).toBeCloseTo((30 * 100 + 6 * 1_000) / 1e6, 12);
    expect(usd[modelB.id]).toBeCloseTo((50 * 1 + 4 * 10) / 1e6, 12);
  });

  it('does not route a bad request: the slice ends with its error, as without routing', async () => {
    first.reply({ kind: 'error', status: 400, message: 'messages: the prompt is malformed' });
    const t = await turn('routed', 'a malformed turn');

    expect(t.status.lastError).toContain('the prompt is malformed');
    expect(t.toFirst).toHaveLength(1); // a 400 is not retried either
    expect(t.toSecond).toHaveLength(0);
    expect(t.info.some((i) => i.includes('routed to'))).toBe(false);
    const [slice] = await slices(t.threadId);
    expect(slice!.agent?.model).toBe(modelA.id);
  });

  it('keeps the behaviour of an agent with one model: an error reply after its retries', async () => {
    first.reply(...Array.from({ length: ATTEMPTS }, () => overloaded));
    const t = await turn('single', 'anyone there?');

    expect(t.status.lastError).toContain('Overloaded');
    expect(t.toFirst).toHaveLength(ATTEMPTS);
    expect(t.toSecond).toHaveLength(0);
    expect(t.info.some((i) => i.includes('routed to'))).toBe(false);
    expect(t.info).toContain('Error: Overloaded');
    const [slice] = await slices(t.threadId);
    expect(slice!.agent).toMatchObject({ name: 'single', model: modelA.id });
  });

  it("routes at once when the first model's limits key is closed longer than closedForMs", async () => {
    const limits = { key: 'routing-impatient', rpm: 6_000, reserve: 0 };
    await store.capacity.backoff(limits.key, limits, 30_000);
    second.reply({ kind: 'turn', turn: { text: ['served while the key is closed'] } });
    const t = await turn('impatient', 'quick');

    expect(t.status.lastError).toBeUndefined();
    expect(lastAssistant(t.history)).toEqual({ kind: 'assistant', text: 'served while the key is closed' });
    expect(t.toFirst).toHaveLength(0);
    expect(t.toSecond).toHaveLength(1);
    expect(t.info.find((i) => i.includes('routed to'))).toMatch(
      new RegExp(
        `^model ${modelA.id} unavailable \\(limits key routing-impatient closed \\(backoff\\) for \\d+ s\\): routed to ${modelB.id}$`,
      ),
    );
    expect((await slices(t.threadId))[0]!.agent?.model).toBe(modelB.id);
  });

  it('keeps the first model when its key closes for less than closedForMs: the workflow waits, as before', async () => {
    const limits = { key: 'routing-patient', rpm: 6_000, reserve: 0 };
    await store.capacity.backoff(limits.key, limits, 1_500);
    first.reply({ kind: 'turn', turn: { text: ['served by the first, after the wait'] } });
    const t = await turn('patient', 'no hurry');

    expect(t.status.lastError).toBeUndefined();
    expect(lastAssistant(t.history)).toEqual({ kind: 'assistant', text: 'served by the first, after the wait' });
    expect(t.toFirst).toHaveLength(1);
    expect(t.toSecond).toHaveLength(0);
    expect((await slices(t.threadId))[0]!.agent?.model).toBe(modelA.id);
  });
});
