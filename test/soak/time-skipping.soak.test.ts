/**
 * Durable timers at their real lengths, on Temporal's time-skipping test server (infra/test-server): an hour's sleep, a
 * `sleep_until` the next day in a time zone, and a day's sleep that wakes on a worker that replaced the one that ran it. The server's
 * clock stands still until a test lets it skip; while it may, it jumps to the next timer whenever nothing runs, so each
 * wait takes moments of wall time and the assertions read the server's clock. Needs Java 17+ and Maven (the soak tier's
 * prerequisites, installed by .ci/run); without them the suite fails, saying so.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installTestServer } from '../../infra/test-server/install';
import { startTimeSkippingServer, type TimeSkippingServer } from '../../infra/test-server/server';
import { ScriptedModel } from '../../src/model/scripted';
import { treeScript } from '../fixtures/tree-script';
import { checkReplay, eventually, render, replacementWorker, startTestSystem, type TestSystem, uid } from '../helpers';

let server: TimeSkippingServer;
let sys: TestSystem;
const model = new ScriptedModel(treeScript);
const HOUR = 3_600_000;

beforeAll(async () => {
  server = await startTimeSkippingServer(installTestServer());
  sys = await startTestSystem({ model, address: server.address });
}, 600_000);
afterAll(async () => {
  await sys?.shutdown();
  await server?.stop();
});

const hasLine = async (s: TestSystem, threadId: string, line: string) =>
  render(await s.client.thread(threadId).history()).includes(line);

it('sleeps for an hour of server time and wakes with the reference text', async () => {
  const thread = await sys.client.startThread({ threadId: uid('hour') });
  await thread.sendUserText('call sleep {"seconds":3600}');
  expect((await thread.waitForIdle({ settled: true })).pendingCall).toMatchObject({ name: 'sleep', passive: true });
  const before = await server.now();
  await server.skipping(() =>
    eventually(() => hasLine(sys, thread.threadId, 'result #1: Slept for 3600 seconds'), 60_000, 'wake-up'),
  );
  expect((await server.now()) - before).toBeGreaterThanOrEqual(HOUR);
  await thread.waitForIdle({ settled: true });
  expect(render(await thread.history())).toEqual([
    'user: call sleep {"seconds":3600}',
    'call #1 sleep {"seconds":3600}',
    'result #1: Slept for 3600 seconds',
    'assistant: ok: Slept for 3600 seconds',
  ]);
  await checkReplay(thread, 'time-skipping-hour', server.address);
});

it('sleeps until 09:00 tomorrow in a time zone', async () => {
  // Tomorrow by the server's clock, in Tokyo (UTC+9, no daylight saving): between 9 and 33 hours away.
  const tokyo = (ms: number) => new Date(ms + 9 * HOUR).toISOString().slice(0, 10);
  const date = tokyo((await server.now()) + 24 * HOUR);
  const thread = await sys.client.startThread({ threadId: uid('until') });
  await thread.sendUserText(`call sleep_until {"date":"${date}","time":"09:00","timezone":"Asia/Tokyo"}`);
  await thread.waitForIdle({ settled: true });
  const woke = `result #1: Woke up at target time: ${date} 09:00 (Asia/Tokyo)`;
  await server.skipping(() => eventually(() => hasLine(sys, thread.threadId, woke), 60_000, 'wake-up'));
  // The timer fired at 09:00 Tokyo time (00:00 UTC) or just after it, by the server's clock.
  expect(await server.now()).toBeGreaterThanOrEqual(Date.parse(`${date}T00:00:00Z`));
});

it('wakes a day-long sleep on a worker that replaced the one that dispatched it', async () => {
  const own = await startTestSystem({ model, address: server.address });
  try {
    const thread = await own.client.startThread({ threadId: uid('day') });
    await thread.sendUserText('call sleep {"seconds":86400}');
    await thread.waitForIdle({ settled: true });
    // The worker that ran the sleep's slice goes, with its cache; a new one knows the thread only from its history.
    await own.worker!.shutdown();
    const replacement = await replacementWorker(own, model);
    try {
      const before = await server.now();
      await server.skipping(() =>
        eventually(
          () => hasLine(own, thread.threadId, 'assistant: ok: Slept for 86400 seconds'),
          60_000,
          'wake-up on the new worker',
        ),
      );
      // The timer was set when the sleep was dispatched, a moment before `before`.
      expect((await server.now()) - before).toBeGreaterThanOrEqual(24 * HOUR - 60_000);
      await checkReplay(thread, 'time-skipping-day', server.address);
    } finally {
      await replacement.stop();
    }
  } finally {
    await own.shutdown().catch(() => {});
  }
});
