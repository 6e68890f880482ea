/**
 * Provider limits across real worker processes (issue 27 §2): two processes on one SQLite store keep one shared
 * concurrency, and a process SIGKILLed while it holds capacity gives it back when its lease expires (30 s after its
 * last renewal), not before and not never. The processes print `MODEL_START`/`MODEL_END` around each model call.
 */
import { expect, it } from 'vitest';
import { LEASE_MS } from '../../src/activities/capacity-gate';
import { ScriptedModel } from '../../src/model/scripted';
import { type WorkerProcess, workerProcessSuite } from '../crash-worker';
import { uid } from '../helpers';

const suite = workerProcessSuite(new ScriptedModel(() => ({ text: 'unused' })));
const ONE_AT_A_TIME = JSON.stringify({ key: 'fleet', concurrency: 1, reserve: 0 });

/** Each process's model calls as [start, end] intervals (an unfinished call ends at +∞). */
function calls(procs: WorkerProcess[]): [number, number][] {
  const out: [number, number][] = [];
  for (const p of procs) {
    let start: number | undefined;
    for (const line of p.lines) {
      const m = /^MODEL_(START|END) (\d+)$/.exec(line);
      if (!m) continue;
      if (m[1] === 'START') start = Number(m[2]);
      else if (start !== undefined) {
        out.push([start, Number(m[2])]);
        start = undefined;
      }
    }
    if (start !== undefined) out.push([start, Infinity]);
  }
  return out;
}

/** The most calls in flight at one moment. */
function mostAtOnce(intervals: [number, number][]): number {
  const edges = intervals.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]);
  // At equal times an end comes before a start: the lease was released before the next call began.
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d!));
  return most;
}

it('two worker processes on one store make one model call at a time between them', async () => {
  const procs = [suite.startWorker({ LIMITS: ONE_AT_A_TIME }), suite.startWorker({ LIMITS: ONE_AT_A_TIME })];
  await Promise.all(procs.map((p) => p.waitFor(/^READY$/)));
  const threads = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const thread = await suite.sys().client.startThread({ threadId: uid('fleet') });
      await thread.sendUserText(`take your time ${i}`);
      return thread;
    }),
  );
  for (const thread of threads) {
    const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
    expect(status.lastError).toBeUndefined();
    const replies = (await thread.history()).filter((h) => h.kind === 'assistant');
    expect(replies).toEqual([{ kind: 'assistant', text: 'took it' }]);
  }
  const made = calls(procs);
  expect(made).toHaveLength(8);
  expect(mostAtOnce(made)).toBe(1);
}, 150_000);

it('a worker killed while it holds capacity gives it back when its lease expires', async () => {
  const a = suite.startWorker({ LIMITS: ONE_AT_A_TIME });
  await a.waitFor(/^READY$/);
  const slow = await suite.sys().client.startThread({ threadId: uid('killed-holder') });
  await slow.sendUserText('write slowly');
  await a.waitFor(/^MODEL_START/);
  const b = suite.startWorker({ LIMITS: ONE_AT_A_TIME });
  await b.waitFor(/^READY$/);
  a.child.kill('SIGKILL');
  const killedAt = Date.now();
  await a.exited;
  const other = await suite.sys().client.startThread({ threadId: uid('after-kill') });
  await other.sendUserText('take your time');
  await b.waitFor(/^MODEL_START/, LEASE_MS + 30_000);
  const resumedAt = calls([b])[0]![0];
  // Not before the lease could have expired (renewed every 10 s, so at least 20 s after the kill), and not much after.
  expect(resumedAt - killedAt).toBeGreaterThanOrEqual(LEASE_MS - 10_000 - 1_000);
  expect(resumedAt - killedAt).toBeLessThanOrEqual(LEASE_MS + 10_000);
  for (const thread of [slow, other]) {
    const status = await thread.waitForIdle({ settled: true, timeoutMs: 90_000 });
    expect(status.lastError).toBeUndefined();
  }
  expect(mostAtOnce(calls([b]))).toBe(1);
}, 150_000);
