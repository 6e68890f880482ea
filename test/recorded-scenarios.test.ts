/**
 * Scenarios kept for the replay gate that no other test records: a flood of texts into a busy thread while Temporal
 * suggests continue-as-new, a tool prompt, a model that fails on every attempt, and a deeply nested input. Each asserts only what
 * holds for every release (so the same scenario can be recorded into each release's set); the behaviour that
 * changed between releases is pinned by the tests of that behaviour.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../src/devserver/server';
import { resultInput } from '../src/core/inputs';
import type { InputMessage } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import type { ModelStreamPart } from '../src/model/provider';
import { checkReplay, eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';
import type { ToolContext } from '../src/tools/tool';

const calls: ToolContext[] = [];
const lastUser = (req: { messages: { role: string; text?: string }[] }) =>
  [...req.messages].reverse().find((m) => m.role === 'user')?.text ?? '';

async function* failing(): AsyncIterable<ModelStreamPart> {
  yield* [];
  throw new Error('model refuses this input');
}

const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1];
  const text = lastUser(req);
  if (text.includes('poison')) return failing();
  if (last?.role === 'user' && text.startsWith('call ')) return { toolCall: { name: text.slice(5), args: {} } };
  // Slow enough that a burst of texts lands while a slice runs.
  return { text: `ok: ${text.slice(0, 40)}`, chunks: 4, delayMs: 15 };
});

let server: DevServer;
let sys: TestSystem;
beforeAll(async () => {
  server = await startDevServer({ ui: false, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 40 } });
  sys = await startTestSystem({
    model,
    tools: [recordingTool('ask_user', calls)],
    address: server.address,
    threadOptions: { sliceMaxAttempts: 2 },
  });
});
afterAll(async () => {
  await sys?.shutdown();
  await server?.stop();
});

it('a flood of texts into a busy thread past the continue-as-new suggestion: each text committed exactly once', async () => {
  const thread = await sys.client.startThread({ threadId: uid('flood') });
  const firstRun = (await thread.workflow.describe()).runId;
  const sent: string[] = [];
  for (let burst = 0; burst < 6; burst++) {
    const texts = Array.from({ length: 10 }, (_, i) => `flood ${burst}-${i}`);
    await Promise.all(texts.map((t) => thread.sendUserText(t)));
    sent.push(...texts);
    await new Promise((r) => setTimeout(r, 50));
  }
  await thread.waitForIdle({ timeoutMs: 90_000 });
  const lines = render(await thread.history());
  for (const t of sent) expect(lines.filter((l) => l.includes(t) && l.startsWith('user: '))).toHaveLength(1);
  await checkReplay(
    { threadId: thread.threadId, workflow: sys.temporal.workflow.getHandle(thread.threadId, firstRun) },
    'flood-busy-thread',
    server.address,
    firstRun,
  );
}, 120_000);

it('a tool prompt shows while its call is pending and goes with the result', async () => {
  const thread = await sys.client.startThread({ threadId: uid('prompt') });
  await thread.sendUserText('call ask_user');
  const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
  const prompt: InputMessage = {
    id: uid('prompt-input'),
    threadId: thread.threadId,
    content: { type: 'text', text: '' },
    synthetic: {
      type: 'prompt',
      toolCallId: call.toolCallId,
      prompt: {
        kind: 'user_choice',
        id: 'c1',
        prompt: 'Deploy?',
        choices: ['Yes', 'No'],
        default: 1,
        responseUrl: 'http://127.0.0.1:9/choice',
      },
    },
  };
  await sys.client.deliver(prompt);
  await eventually(async () => (await thread.status()).prompts.length === 1, 30_000, 'the prompt');
  await sys.client.deliver(resultInput(thread.threadId, call.toolCallId, 'Yes'));
  const done = await thread.waitForIdle({ settled: true });
  expect(done.prompts).toEqual([]);
  expect(render(await thread.history())).toContain('result #1: Yes');
  await checkReplay(thread, 'prompt-answered', server.address);
});

it('a model that fails on every attempt: the error is reported and the next text is handled', async () => {
  const thread = await sys.client.startThread({ threadId: uid('fails') });
  await thread.sendUserText('poison pill');
  await eventually(
    async () => {
      const s = await thread.status();
      return s.status !== 'running' && s.lastError?.includes('model refuses this input');
    },
    60_000,
    'the failure',
  );
  const poisonCalls = () =>
    model.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.text === 'poison pill')).length;
  const firstFailure = poisonCalls();
  await thread.sendUserText('are you there?');
  // Either the failed batch is retried (and fails again) or it was set aside and the new text is answered.
  await eventually(
    async () => {
      const s = await thread.status();
      const answered = render(await thread.history()).includes('assistant: ok: are you there?');
      return s.status !== 'running' && (answered || poisonCalls() >= 2 * firstFailure);
    },
    60_000,
    'the next slice',
  );
  await checkReplay(thread, 'model-fails-every-attempt', server.address);
}, 120_000);

it('an input with deeply nested metadata is never committed half', async () => {
  const thread = await sys.client.startThread({ threadId: uid('deep') });
  await thread.sendUserText('hello');
  await thread.waitForIdle();
  let metadata: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < 3000; i++) metadata = { d: metadata };
  try {
    await sys.client.deliver({
      id: uid('deep-input'),
      threadId: thread.threadId,
      content: { type: 'text', text: 'deep' },
      metadata,
    });
  } catch (e) {
    // A release with input limits refuses it at the client.
    expect((e as Error).name).toBe('InvalidInputError');
  }
  await eventually(async () => (await thread.status()).status !== 'running', 60_000, 'the thread settling');
  await new Promise((r) => setTimeout(r, 3_000));
  const lines = render(await thread.history());
  expect(lines.slice(0, 2)).toEqual(['user: hello', 'assistant: ok: hello']);
  expect(lines.filter((l) => l === 'user: hello')).toHaveLength(1);
  await checkReplay(thread, 'poison-deep-metadata', server.address);
}, 120_000);
