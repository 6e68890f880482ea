/**
 * Floods at the suite dev server's limits (our `DEFAULT_DYNAMIC_CONFIG`), the soak tier (split from
 * test/soak/flood-lowered-limits.soak.test.ts, which keeps the lowered-limits floods):
 *
 * 1. 20,000 inputs into one thread, no workflow-task failure loop;
 * 2. 1,000 threads × 20 inputs through one worker.
 *
 * Every send is counted as accepted (it resolved) or failed (with its error type); every accepted input must be in the
 * committed history exactly once, and every run of the thread is read back from Temporal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptionEvent } from '../../src/tools/messages';
import type { ToolContext } from '../../src/tools/tool';
import {
  committedCounts,
  counted,
  expectExactlyOnce,
  flood,
  type FloodInput,
  type FloodOutcome,
  floodModel,
  type Ledger,
  ledger,
  load,
  mapBounded,
  memory,
  runsOf,
  runTotals,
  subscribedThread,
} from '../fixtures/flood';
import { watchTool } from '../fixtures/watch-tool';
import { render, startTestSystem, type TestSystem, uid } from '../helpers';

// ---------------------------------------------------------------------------------------------------------------
// 2 and 3. The suite's dev server, with our DEFAULT_DYNAMIC_CONFIG

describe('the default limits', () => {
  let sys: TestSystem;
  const calls: ToolContext[] = [];
  beforeAll(async () => {
    sys = await startTestSystem({ model: floodModel(), tools: [watchTool(calls)] });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('20,000 inputs into one thread: each committed once, no workflow-task failure loop, the worker alive', async () => {
    const { thread, sub } = await subscribedThread(sys, calls, uid('flood-20k'));
    // After the worker's first workflow task: its workflow bundle is loaded.
    const mem0 = memory();

    // 18,000 texts and 2,000 associative events, interleaved.
    const inputs: FloodInput[] = [];
    for (let i = 0; i < 20_000; i++) {
      const key = i % 10 === 9 ? `flood-e-${i}` : `flood-u-${i}`;
      inputs.push(
        i % 10 === 9
          ? { key, send: () => sys.client.deliver(subscriptionEvent(sub, key, { associative: true })) }
          : { key, send: () => thread.sendUserText(key, key) },
      );
    }
    const t0 = Date.now();
    const sent = await flood(inputs, 100);
    const memSent = memory();
    const idle = await thread.waitForIdle({ timeoutMs: 240_000 });
    const idleMs = Date.now() - t0;
    const l = ledger(
      sent,
      inputs.map((x) => x.key),
      committedCounts(render(await thread.history())),
    );
    const runs = await runsOf(sys.temporal, thread.threadId);
    const totals = runTotals(runs, t0 + sent.ms);
    const workerState = sys.worker!.worker.getState();
    console.log(
      'flood, 20,000 inputs into one thread, default limits:',
      JSON.stringify({
        ...counted(l),
        errors: sent.errors,
        sendMs: sent.ms,
        idleMs,
        maxSendMs: sent.maxSendMs,
        ...totals,
        eventsPerRun: runs.map((r) => r.events),
        failedTasksPerRun: runs.map((r) => r.workflowTaskFailed),
        statusRuns: idle.runs,
        slices: idle.slices,
        dropped: idle.dropped,
        workerState,
        memoryMiB: { before: mem0, afterSends: memSent, afterIdle: memory() },
        loadavg: load(),
      }),
    );

    expectExactlyOnce(sent, l);
    expect(idle.dropped).toEqual({});
    expect(idle.status).toBe('idle');
    expect(idle.runs).toBe(runs.length);
    expect(totals.terminated).toBe(0);
    expect(totals.workflowTaskFailed).toBeLessThanOrEqual(2 * runs.length);
    expect(workerState).toBe('RUNNING');
  }, 300_000);

  // 90–120 s on a quiet 2-core machine, ~200 s when it is shared with other test runs: the bound is generous.
  it('1,000 threads × 20 inputs through one worker: each committed once in every thread, no failure loop', async () => {
    const mem0 = memory();
    const prefix = uid('flood-many');
    const threadIds = Array.from({ length: 1000 }, (_, t) => `${prefix}-${t}`);
    const keys = Array.from({ length: 20 }, (_, j) => `flood-u-${j}`);
    // Round robin: every thread gets its texts spread over the whole flood, so all 1,000 are busy at once and the
    // worker's cache (100 workflows) keeps evicting and replaying them. The first text starts each thread.
    const inputs = keys.flatMap((key) =>
      threadIds.map((threadId): FloodInput => ({
        key: `${threadId}/${key}`,
        send: () => sys.client.sendUserText(threadId, key, `${threadId}/${key}`),
      })),
    );
    const t0 = Date.now();
    const sent = await flood(inputs, 100);
    const memSent = memory();
    const idles = await mapBounded(threadIds, 50, (id) => sys.client.thread(id).waitForIdle({ timeoutMs: 180_000 }));
    const idleMs = Date.now() - t0;
    const memIdle = memory();

    const perThread = await mapBounded(threadIds, 20, async (threadId) => {
      const own = (k: string) => `${threadId}/${k}`;
      const outcome: FloodOutcome = {
        ...sent,
        accepted: new Set(keys.filter((k) => sent.accepted.has(own(k)))),
        failed: new Map(keys.filter((k) => sent.failed.has(own(k))).map((k) => [k, sent.failed.get(own(k))!])),
      };
      const counts = committedCounts(render(await sys.client.thread(threadId).history()));
      return { threadId, ledger: ledger(outcome, keys, counts), runs: await runsOf(sys.temporal, threadId) };
    });
    const totals = runTotals(
      perThread.flatMap((p) => p.runs),
      t0 + sent.ms,
    );
    const all = (f: (l: Ledger) => string[]) => perThread.flatMap((p) => f(p.ledger).map((k) => `${p.threadId}/${k}`));
    const l = {
      lost: all((x) => x.lost),
      duplicated: all((x) => x.duplicated),
      failedButStored: all((x) => x.failedButStored),
      unknown: all((x) => x.unknown),
    };
    const problemsPerThread = perThread.map((p) =>
      p.runs.reduce((n, r) => n + r.workflowTaskFailed + r.workflowTaskTimedOut, 0),
    );
    const workerState = sys.worker!.worker.getState();
    console.log(
      'flood, 1,000 threads × 20 inputs, one worker:',
      JSON.stringify({
        sent: sent.sent,
        accepted: sent.accepted.size,
        failed: sent.failed.size,
        stored: perThread.reduce((n, p) => n + p.ledger.stored, 0),
        lost: l.lost.length,
        duplicated: l.duplicated.length,
        failedButStored: l.failedButStored.length,
        unknown: l.unknown.length,
        errors: sent.errors,
        sendMs: sent.ms,
        idleMs,
        maxSendMs: sent.maxSendMs,
        ...totals,
        threadsWithTaskProblems: problemsPerThread.filter((n) => n > 0).length,
        maxTaskProblemsPerThread: Math.max(...problemsPerThread),
        slices: idles.reduce((n, s) => n + s.slices, 0),
        notIdle: idles.filter((s) => s.status !== 'idle').length,
        workerState,
        memoryMiB: { before: mem0, afterSends: memSent, afterIdle: memIdle, afterChecks: memory() },
        loadavg: load(),
      }),
    );

    expectExactlyOnce(sent, l);
    expect(idles.filter((s) => s.status !== 'idle' || Object.keys(s.dropped).length > 0)).toEqual([]);
    expect(totals.terminated).toBe(0);
    // No loop: a failure loop repeats on the same thread; an overloaded worker may let a few tasks time out.
    expect(totals.workflowTaskFailed).toBeLessThanOrEqual(10);
    expect(Math.max(...problemsPerThread)).toBeLessThanOrEqual(10);
    expect(workerState).toBe('RUNNING');
  }, 420_000);
});
