/** The sleep tools on Temporal durable timers, including a worker restart in the middle of a sleep. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { treeScript } from './fixtures/tree-script';
import {
  checkReplay,
  eventually,
  historyFile,
  render,
  replacementWorker,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

let sys: TestSystem;
const model = new ScriptedModel(treeScript);
beforeAll(async () => {
  sys = await startTestSystem({ model });
});
afterAll(async () => {
  await sys?.shutdown();
});

const hasLine = async (threadId: string, line: string) =>
  render(await sys.client.thread(threadId).history()).includes(line);

it('sleeps for 2 s as a passive call and resumes with the reference text', async () => {
  const thread = await sys.client.startThread({ threadId: uid('sleep') });
  await thread.sendUserText('call sleep {"seconds":2}');
  const sleeping = await thread.waitForIdle({ settled: true });
  expect(sleeping.pendingCall).toMatchObject({ name: 'sleep', passive: true });
  await eventually(() => hasLine(thread.threadId, 'result #1: Slept for 2 seconds'), 30_000, 'wake-up');
  await thread.waitForIdle({ settled: true });
  await expect(historyFile(await thread.history())).toMatchFileSnapshot('__snapshots__/sleep/sleep-2s.txt');
  await checkReplay(thread, 'sleep-2s');
});

it('wakes at once from sleep_until in the past', async () => {
  const thread = await sys.client.startThread({ threadId: uid('past') });
  await thread.sendUserText('call sleep_until {"date":"2020-01-01","time":"00:00"}');
  await eventually(
    () => hasLine(thread.threadId, 'result #1: Target time 2020-01-01 00:00 is in the past. Waking immediately.'),
    30_000,
    'wake-up',
  );
});

it('rejects an unknown time zone with an error result', async () => {
  const thread = await sys.client.startThread({ threadId: uid('tz') });
  await thread.sendUserText('call sleep_until {"date":"2030-01-01","time":"09:00","timezone":"Mars/Olympus"}');
  await thread.waitForIdle({ settled: true });
  expect(render(await thread.history())[2]).toBe("result #1: Error: invalid timezone 'Mars/Olympus'");
});

it('is interrupted by user text', async () => {
  const thread = await sys.client.startThread({ threadId: uid('wake') });
  await thread.sendUserText('call sleep {"seconds":3600}');
  await thread.waitForIdle({ settled: true });
  await thread.sendUserText('wake up');
  await thread.waitForIdle({ settled: true });
  expect(render(await thread.history()).slice(1)).toEqual([
    'call #1 sleep {"seconds":3600}',
    'result #1: Tool call interrupted by user',
    'user: wake up',
    'assistant: ok: wake up',
  ]);
});

it('does not lose the wake-up when the worker restarts during the sleep', async () => {
  const own = await startTestSystem({ model });
  const thread = await own.client.startThread({ threadId: uid('restart') });
  await thread.sendUserText('call sleep {"seconds":3}');
  await thread.waitForIdle({ settled: true });
  await own.worker!.shutdown();
  await new Promise((r) => setTimeout(r, 4000)); // the timer fires while no worker runs
  const replacement = await replacementWorker(own, model);
  try {
    await eventually(
      async () => render(await thread.history()).includes('result #1: Slept for 3 seconds'),
      30_000,
      'wake-up after restart',
    );
    await thread.waitForIdle({ settled: true });
    expect(render(await thread.history()).at(-1)).toBe('assistant: ok: Slept for 3 seconds');
  } finally {
    await replacement.stop();
    await own.connection.close();
    await own.store.close();
  }
});
