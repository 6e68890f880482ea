/**
 * Replay-evals over a rewound thread (issues 28 §2 and 29 §1): every slice's request is rebuilt as that slice sent it —
 * the slices before the rewind with the items it later archived, the slices after it without them — and the rewind's
 * own slice, which called no model, is not evaluated.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { evaluateThreads } from '../src/evals';
import type { ModelRequest } from '../src/model/provider';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import type { ToolContext } from '../src/tools/tool';
import { eventually, recordingTool, startTestSystem, type TestSystem, uid } from './helpers';
import { selfOf, textOf } from './model-requests';

const script = (req: ModelRequest): ScriptedReply => {
  const last = req.messages.at(-1);
  if (last?.role === 'user' && last.text === 'job') return { toolCall: { name: 'job', args: {} } };
  return { text: `ack ${textOf(last)}` };
};

let sys: TestSystem;
let recording: ScriptedModel;
const jobs: ToolContext[] = [];
const tools = [recordingTool('job', jobs)];
beforeAll(async () => {
  recording = new ScriptedModel(script);
  sys = await startTestSystem({ model: recording, tools });
});
afterAll(async () => {
  await sys?.shutdown();
});

it('rebuilds each slice as it ran, before and after a rewind, and skips the rewind itself', async () => {
  const id = uid('eval-rewind');
  const t = sys.client.thread(id);
  for (const text of ['a', 'b', 'job']) {
    await t.sendUserText(text);
    await t.waitForIdle();
  }
  await eventually(() => jobs.find((j) => j.threadId === id));
  await sys.client.rewindThread(id, { to: 2 });
  for (const text of ['c', 'd']) {
    await t.sendUserText(text);
    await t.waitForIdle();
  }
  const recorded = recording.requests.filter((r) => selfOf(r) === id);
  expect(recorded.map((r) => r.messages.map(textOf))).toEqual([
    ['a'],
    ['a', 'ack a', 'b'],
    ['a', 'ack a', 'b', 'ack b', 'job'],
    ['a', 'ack a', 'c'],
    ['a', 'ack a', 'c', 'ack c', 'd'],
  ]);

  const candidate = new ScriptedModel(script);
  const report = await evaluateThreads(sys.store, { threads: [id], model: candidate, tools });
  expect(candidate.requests).toEqual(recorded);
  expect(report.totals).toMatchObject({ evaluatedRounds: 5, divergedSlices: 0, providerCalls: 5 });
  expect(report.threads[0]!.slices.map((s) => s.slice)).toEqual([0, 1, 2, 4, 5]);
});
