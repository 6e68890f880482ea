/**
 * Floods never terminate a thread (issue "Threads survive what production does to them", item 2), on a dev server
 * whose history limits are lowered to stand in for Temporal's 51,200-event hard limit: 3,000 texts and 300
 * subscription events into one busy thread; nothing lost or doubled, no run terminated or over the limit. The floods
 * at the default limits (20,000 inputs into one thread; 1,000 threads × 20 inputs) are in the soak tier:
 * test/soak/flood.soak.test.ts.
 *
 * Every send is counted as accepted (it resolved) or failed (with its error type); every accepted input must be in the
 * committed history exactly once, and every run of the thread is read back from Temporal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/devserver/server';
import { subscriptionEvent } from '../../src/tools/messages';
import type { ToolContext } from '../../src/tools/tool';
import {
  committedCounts,
  counted,
  expectExactlyOnce,
  flood,
  type FloodInput,
  floodModel,
  ledger,
  load,
  memory,
  runsOf,
  runTotals,
  subscribedThread,
} from '../fixtures/flood';
import { watchTool } from '../fixtures/watch-tool';
import { render, startTestSystem, type TestSystem, uid } from '../helpers';

// ---------------------------------------------------------------------------------------------------------------
// 1. Lowered limits

/**
 * Stand-ins for the production limits, lowered (the hard limit 20×, the others 7–10×) but in the same order: our own
 * continue-as-new threshold (`maxRunEvents`, 2,000) < Temporal's suggestion (4,096) < our signal cap (5,000) ≪ the hard
 * limit (51,200). The cap is low enough that the flood reaches it, so senders also go through the busy-retry path
 * (inbox/busy.ts).
 */
const LOW_LIMITS = {
  'limit.historyCount.error': 2500,
  'limit.historyCount.warn': 2000,
  'limit.historyCount.suggestContinueAsNew': 400,
  'history.maximumSignalsPerExecution': 500,
};
const LOW_MAX_RUN_EVENTS = 300;

// Also with the experimental local slices (decision 50): a workflow task that fails after its local slice committed
// (continue-as-new refused because signals landed during the task, which happens in almost every run here) must not
// lose the inputs that arrived meanwhile.
describe.each([
  { slices: 'activity slices', localSliceBudgetMs: 0 },
  { slices: 'local slices', localSliceBudgetMs: 500 },
])('a flood into one busy thread under lowered history limits, $slices', ({ localSliceBudgetMs }) => {
  let server: DevServer;
  let sys: TestSystem;
  const calls: ToolContext[] = [];
  beforeAll(async () => {
    server = await startDevServer({ ui: false, dynamicConfig: LOW_LIMITS });
    sys = await startTestSystem({
      address: server.address,
      model: floodModel(),
      tools: [watchTool(calls)],
      threadOptions: { maxRunEvents: LOW_MAX_RUN_EVENTS, localSliceBudgetMs },
    });
  });
  afterAll(async () => {
    await sys?.shutdown();
    await server?.stop();
  });

  it('3,000 texts and 300 events: each accepted input committed once, never terminated, no run over the limit', async () => {
    const { thread, sub } = await subscribedThread(sys, calls, uid('flood-low'));
    const mem0 = memory();

    // 3,000 texts, and after every tenth an associative subscription event (committed inline).
    const inputs: FloodInput[] = [];
    for (let i = 0; i < 3000; i++) {
      const key = `flood-u-${i}`;
      inputs.push({ key, send: () => thread.sendUserText(key, key) });
      if (i % 10 === 9) {
        const ek = `flood-e-${i}`;
        inputs.push({ key: ek, send: () => sys.client.deliver(subscriptionEvent(sub, ek, { associative: true })) });
      }
    }
    const t0 = Date.now();
    const sent = await flood(inputs, 100);
    const idle = await thread.waitForIdle({ timeoutMs: 180_000 });
    const idleMs = Date.now() - t0;
    const l = ledger(
      sent,
      inputs.map((x) => x.key),
      committedCounts(render(await thread.history())),
    );
    const runs = await runsOf(sys.temporal, thread.threadId);
    const totals = runTotals(runs, t0 + sent.ms);
    console.log(
      `flood, lowered limits, localSliceBudgetMs ${localSliceBudgetMs}:`,
      JSON.stringify({
        ...counted(l),
        errors: sent.errors,
        sendMs: sent.ms,
        idleMs,
        maxSendMs: sent.maxSendMs,
        ...totals,
        runsAtSignalCap: runs.filter((r) => r.signals >= LOW_LIMITS['history.maximumSignalsPerExecution']).length,
        eventsPerRun: runs.map((r) => r.events),
        failedTasksPerRun: runs.map((r) => r.workflowTaskFailed),
        statuses: runs.map((r) => r.status),
        localSlices: runs.reduce((n, r) => n + r.localSlices, 0),
        maxLocalPerTask: Math.max(...runs.map((r) => r.maxLocalPerTask)),
        statusRuns: idle.runs,
        slices: idle.slices,
        dropped: idle.dropped,
        memoryMiB: { before: mem0, afterIdle: memory() },
        loadavg: load(),
      }),
    );

    expectExactlyOnce(sent, l);
    // Nothing was dropped either (a refused signal that was stored after all would show here as a duplicate).
    expect(idle.dropped).toEqual({});
    expect(runs.length).toBeGreaterThan(1);
    expect(idle.runs).toBe(runs.length);
    expect(totals.terminated).toBe(0);
    expect(runs.slice(0, -1).map((r) => r.status)).toEqual(runs.slice(0, -1).map(() => 'CONTINUED_AS_NEW'));
    expect(runs.at(-1)!.status).toBe('RUNNING');
    expect(totals.maxRunEvents).toBeLessThanOrEqual(LOW_LIMITS['limit.historyCount.error']);
    // No loop: a continue-as-new attempt fails when a signal lands during its workflow task; one or two per run.
    expect(totals.workflowTaskFailed).toBeLessThanOrEqual(2 * runs.length);
    // Local slices ran (or none, with them off), and never two in one workflow task.
    const localSlices = runs.reduce((n, r) => n + r.localSlices, 0);
    if (localSliceBudgetMs > 0) expect(localSlices).toBeGreaterThan(0);
    else expect(localSlices).toBe(0);
    expect(Math.max(...runs.map((r) => r.maxLocalPerTask))).toBeLessThanOrEqual(1);

    // And it still answers.
    await thread.sendUserText('final question');
    await thread.waitForIdle({ timeoutMs: 60_000 });
    expect(render(await thread.history()).slice(-2)).toEqual(['user: final question', 'assistant: ok: final question']);
  }, 240_000);
});
