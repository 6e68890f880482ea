/**
 * While a thread's workflow task is failing (a loaded worker timed it out, or a bad build is running), the server
 * refuses updates with FAILED_PRECONDITION. A client call that waits on the thread must wait through that, not fail:
 * `waitForIdle` keeps asking until its deadline, and an acknowledged delivery keeps the input (by signal if need be).
 */
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { ScriptedModel } from '../../src/model/scripted';
import { userText } from '../../src/tools/messages';
import { eventually, render, replacementWorker, startTestSystem, type TestSystem, uid } from '../helpers';

const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  return { text: `ok: ${last.role === 'user' ? last.text : last.role}` };
});

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model, noWorker: true });
});
afterAll(async () => sys?.shutdown());

it('waits for idle and delivers through a run of failed workflow tasks', async () => {
  const bad = await Worker.create({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    workflowsPath: join(__dirname, '..', 'fixtures', 'failing-thread-workflow.ts'),
  });
  const badRun = bad.run();
  const stopBad = async () => {
    if (bad.getState() === 'RUNNING') bad.shutdown();
    await badRun;
  };
  onTestFinished(stopBad);
  const thread = await sys.client.startThread({ threadId: uid('failing') });
  await thread.sendUserText('first');
  const handle = sys.temporal.workflow.getHandle(thread.threadId);
  // The server refuses updates from the third attempt of a failing task on (before that it admits and holds them).
  await eventually(
    async () => ((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) >= 3 || undefined,
    30_000,
    'a third task attempt',
  );

  const settled: string[] = [];
  const idle = thread.waitForIdle({ timeoutMs: 60_000 }).finally(() => settled.push('idle'));
  const acked = thread
    .deliver(userText(thread.threadId, 'second'), { acknowledge: true })
    .finally(() => settled.push('deliver'));
  // Both calls met the failing task (the server answers an update at once while it fails) and neither gave up.
  await new Promise((r) => setTimeout(r, 2_000));
  expect(settled).toEqual([]);

  await stopBad();
  const good = await replacementWorker(sys, model);
  try {
    expect(await acked).toMatchObject({ delivered: true });
    await idle;
    const done = await thread.waitForIdle({ timeoutMs: 30_000 });
    expect(done.status).toBe('idle');
    const lines = render(await thread.history());
    expect(lines.filter((l) => l === 'user: first')).toHaveLength(1);
    expect(lines.filter((l) => l === 'user: second')).toHaveLength(1);
  } finally {
    await good.stop();
  }
});
