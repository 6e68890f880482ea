/**
 * A flood of user texts into one thread at the server's default history limits: how many workflow tasks fail,
 * whether the worker survives, how many runs the thread goes through, and that every text is committed once.
 *
 *   npx tsx bench/probes/flood.ts [texts=5000] [concurrency=100]
 *
 * FLOOD_DC='{"history.maximumBufferedEventsBatch":100}' overrides the dev server's dynamic config (e.g. Temporal's
 * defaults, to see the failure loop of decision 45); FLOOD_SAVE=/tmp/flood writes each run's history as JSON.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { threadWorkflowsPath } from '../../src/worker/create-worker';
import { ScriptedModel } from '../../src/model/scripted';
import { startLocalSystem } from '../../src/local-system';

async function main() {
  const total = Number(process.argv[2] ?? 5000);
  const concurrency = Number(process.argv[3] ?? 100);
  const model = new ScriptedModel((req) => {
    const last = [...req.messages].reverse().find((m) => m.role === 'user');
    return { text: `ok: ${last?.role === 'user' ? last.text.slice(0, 30) : ''}`, chunks: 3, delayMs: 5 };
  });
  const sys = await startLocalSystem({
    model,
    dataDir: mkdtempSync(join(tmpdir(), 'flood-')),
    devServer: { ui: false, dynamicConfig: JSON.parse(process.env.FLOOD_DC ?? '{}') },
  });
  const thread = await sys.client.startThread({ threadId: 'flood' });
  const t0 = Date.now();
  let next = 0;
  let failedSends = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        try {
          await thread.sendUserText(`text ${i}`, `text-${i}`);
        } catch (e) {
          failedSends++;
          if (failedSends < 3)
            console.error(
              'send failed',
              (e as Error).name,
              (e as Error).message,
              String((e as Error).cause),
              JSON.stringify((e as { cause?: { code?: unknown; details?: unknown } }).cause?.code),
            );
        }
      }
    }),
  );
  const sentMs = Date.now() - t0;
  const end = await thread.waitForIdle({ timeoutMs: 600_000 });
  const counts = new Map<string, number>();
  for (const it of await thread.history()) if (it.kind === 'user') counts.set(it.text, (counts.get(it.text) ?? 0) + 1);
  let missing = 0;
  let doubled = 0;
  for (let i = 0; i < total; i++) {
    const n = counts.get(`text ${i}`) ?? counts.get(`<interrupt>text ${i}`) ?? 0;
    if (n === 0) missing++;
    if (n > 1) doubled++;
  }
  // Workflow task failures across all runs.
  const bundle = await bundleWorkflowCode({ workflowsPath: threadWorkflowsPath() });
  let wftFailed = 0;
  let historyEvents = 0;
  const taskMs: number[] = [];
  for await (const wf of sys.client.temporal.workflow.list({ query: `WorkflowId = 'flood'` })) {
    const h = await sys.client.temporal.workflow.getHandle('flood', wf.runId).fetchHistory();
    if (process.env.FLOOD_SAVE) writeFileSync(`${process.env.FLOOD_SAVE}-${h.events?.length}.json`, historyToJSON(h));
    // The workflow code's own share of a task: replaying the whole run in this process.
    const r0 = Date.now();
    await Worker.runReplayHistory({ workflowBundle: bundle }, h, 'flood');
    console.error(`replayed run of ${h.events?.length} events in ${Date.now() - r0} ms`);
    const failures = (h.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    wftFailed += failures.length;
    for (const f of failures.slice(0, 3))
      console.error(
        'workflow task failed:',
        f.workflowTaskFailedEventAttributes?.cause,
        f.workflowTaskFailedEventAttributes?.failure?.message?.slice(0, 300),
      );
    historyEvents += h.events?.length ?? 0;
    // How long each workflow task took on the worker (started → completed/failed), from the server's timestamps.
    let started: number | undefined;
    for (const e of h.events ?? []) {
      const t = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6);
      if (e.workflowTaskStartedEventAttributes) started = t;
      else if (
        (e.workflowTaskCompletedEventAttributes || e.workflowTaskFailedEventAttributes) &&
        started !== undefined
      ) {
        taskMs.push(t - started);
        started = undefined;
      }
    }
  }
  console.log(
    JSON.stringify({
      total,
      concurrency,
      sentMs,
      idleMs: Date.now() - t0,
      runs: end.runs,
      historyEvents,
      slices: end.slices,
      failedSends,
      missing,
      doubled,
      wftFailed,
      workflowTasks: taskMs.length,
      taskMsMax: Math.max(...taskMs),
      taskMsP50: taskMs.sort((a, b) => a - b)[Math.floor(taskMs.length / 2)],
      dropped: end.dropped,
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    }),
  );
  await sys.shutdown();
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
