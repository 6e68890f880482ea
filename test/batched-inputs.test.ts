/**
 * Inputs that arrive together are prepared together (issue 25 §3, decision 67): a tool result and a user text queued
 * while no worker ran reach the model in one completion, in either order, as the original runtime prepares them, while
 * the first slice of the workflow task still runs as a local activity. Real dev server; the worker is stopped while
 * the inputs arrive, so they land in one workflow task.
 */
import { afterAll, afterEach, beforeAll, expect, inject, it } from 'vitest';
import type { InputMessage } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import { toolResult } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { type AgentWorker, createAgentWorker } from '../src/worker/create-worker';
import {
  checkReplay,
  eventually,
  FAST_POLICY,
  recordingTool,
  render,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

const calls: ToolContext[] = [];
const model = new ScriptedModel((req) => {
  const last = req.messages.at(-1)!;
  if (last.role === 'user' && last.text === 'start the build') return { toolCall: { name: 'build', args: {} } };
  return { text: `read ${req.messages.length} messages` };
});
const tools = [recordingTool('build', calls)];

let sys: TestSystem;
let worker: AgentWorker | undefined;
beforeAll(async () => {
  sys = await startTestSystem({ model, tools, noWorker: true });
});
afterEach(stopWorker);
afterAll(async () => sys?.shutdown());

async function startWorker(): Promise<void> {
  worker = await createAgentWorker({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    store: sys.store,
    model,
    tools,
    completionPolicy: FAST_POLICY,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  void worker.run();
}

async function stopWorker(): Promise<void> {
  await worker?.shutdown();
  worker = undefined;
}

type Event = {
  markerRecordedEventAttributes?: { markerName?: string | null } | null;
  activityTaskScheduledEventAttributes?: unknown;
};

/** A thread waiting on `build`, with the worker stopped. */
async function waitingThread(name: string) {
  await startWorker();
  const thread = await sys.client.startThread({ threadId: uid(name) });
  await thread.sendUserText('start the build');
  const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the build call');
  await thread.waitForIdle();
  await stopWorker();
  return { thread, call };
}

for (const order of ['result first', 'user text first'] as const) {
  it(`prepares a tool result and a user text that arrive together in one completion (${order})`, async () => {
    const { thread, call } = await waitingThread('together');
    const result: InputMessage = toolResult(call, 'build 7: green');
    const sendResult = () => sys.client.deliver(result);
    const sendText = () => thread.sendUserText('and deploy it');
    if (order === 'result first') {
      await sendResult();
      await sendText();
    } else {
      await sendText();
      await sendResult();
    }
    const before = model.requests.filter((r) => r.threadId === thread.threadId).length;
    await startWorker();
    await thread.waitForIdle({ settled: true });
    const requests = model.requests.filter((r) => r.threadId === thread.threadId);
    // One completion for both, not one for the first and another for the rest.
    expect(requests.length - before).toBe(1);
    const seen = requests.at(-1)!.messages.map((m) => m.role);
    expect(seen.slice(-2)).toEqual(['tool_result', 'user']);
    const lines = render(await thread.history());
    // The original runtime's rules for the pair: a user text first interrupts the pending call, whose late result is
    // then dropped as already processed (docs/semantics.md).
    const answer = order === 'result first' ? 'build 7: green' : 'Tool call interrupted by user';
    expect(lines).toEqual([
      'user: start the build',
      'call #1 build {}',
      `result #1: ${answer}`,
      'user: and deploy it',
      `assistant: read ${seen.length} messages`,
    ]);
    expect((await thread.status()).dropped).toEqual(order === 'result first' ? {} : { already_processed: 1 });
    // Still the local path: the first turn's slice, then the peek and the batch's slice; no activity.
    const events = ((await thread.workflow.fetchHistory()).events ?? []) as Event[];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
    expect(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(3);
    await checkReplay(thread, `batched-inputs-${order.replace(/ /g, '-')}`);
  });
}

it('prepares three user texts that arrive together in one completion, in their order', async () => {
  await startWorker();
  const thread = await sys.client.startThread({ threadId: uid('texts') });
  await thread.sendUserText('one');
  await thread.waitForIdle({ settled: true });
  await stopWorker();
  for (const t of ['two', 'three', 'four']) await thread.sendUserText(t);
  const before = model.requests.filter((r) => r.threadId === thread.threadId).length;
  await startWorker();
  await thread.waitForIdle({ settled: true });
  expect(model.requests.filter((r) => r.threadId === thread.threadId).length - before).toBe(1);
  expect(render(await thread.history())).toEqual([
    'user: one',
    'assistant: read 1 messages',
    'user: two',
    'user: three',
    'user: four',
    'assistant: read 5 messages',
  ]);
  await checkReplay(thread, 'batched-inputs-three-texts');
});
