/**
 * `npx tsx bench/probes/busy-eviction.ts [threads=200] [cache=20] [slots=10,4] [sliceMs=150]`: starts `threads` new
 * threads at once on one worker with a workflow cache of `cache` and each number of workflow task slots in turn (a
 * fresh local system each), every first slice streaming for about `sliceMs` and calling a tool, and counts what
 * decision 74 is about: how often Temporal's worker evicted a thread while its slice ran (the slice abandoned, its
 * workflow task timed out and ran again), how many tool calls were dispatched more than once, and how long the last
 * thread took to park. Read from each thread's history (`WorkflowTaskTimedOut` events) and the tool's own count.
 * Since decision 74 a worker refuses more slots than half its cache, so only such configurations run here; the
 * figures of the refused ones, measured before, are in docs/performance.md ("Slots and the workflow cache").
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalSystem } from '../../src/local-system';
import { SimulatedModel } from '../../src/model/simulated';
import { defineTool } from '../../src/tools/tool';
import { positionals } from '../lib/args';

interface Row {
  slots: number;
  threads: number;
  parkedMs: number;
  timedOutTasks: number;
  threadsWithTimeout: number;
  dispatches: number;
  dispatchedTwice: number;
}

async function measure(threads: number, cache: number, slots: number, sliceMs: number): Promise<Row> {
  const dispatched = new Map<string, number>();
  let parked = 0;
  let allParked!: () => void;
  const done = new Promise<void>((r) => (allParked = r));
  const tool = defineTool({
    name: 'wait_for_ci',
    description: 'an external system that answers later',
    parameters: { type: 'object' },
    execute(_args, ctx) {
      const n = (dispatched.get(ctx.toolCallId) ?? 0) + 1;
      dispatched.set(ctx.toolCallId, n);
      if (n === 1 && ++parked === threads) allParked();
    },
  });
  const chunks = 10;
  const sys = await startLocalSystem({
    model: new SimulatedModel({ toolName: 'wait_for_ci', chunkBytes: 120, chunkDelayMs: sliceMs / chunks }),
    dataDir: mkdtempSync(join(tmpdir(), 'busy-eviction-')),
    devServer: { ui: false },
    tools: [tool],
    maxCachedWorkflows: cache,
    workerOptions: { maxConcurrentWorkflowTaskExecutions: slots },
  });
  try {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: threads }, (_, i) => sys.client.sendUserText(`t${i}`, `Is build ${i} green?`, `t${i}-u0`)),
    );
    await done;
    const parkedMs = performance.now() - t0;
    // Retried slices re-dispatch a committed call: give them a workflow task timeout and a margin to show up.
    await new Promise((r) => setTimeout(r, 15_000));
    let timedOutTasks = 0;
    let threadsWithTimeout = 0;
    for (let i = 0; i < threads; i++) {
      const history = await sys.client.temporal.workflow.getHandle(`t${i}`).fetchHistory();
      const n = (history.events ?? []).filter((e) => e.workflowTaskTimedOutEventAttributes).length;
      timedOutTasks += n;
      if (n > 0) threadsWithTimeout++;
    }
    const counts = [...dispatched.values()];
    return {
      slots,
      threads,
      parkedMs,
      timedOutTasks,
      threadsWithTimeout,
      dispatches: counts.reduce((a, b) => a + b, 0),
      dispatchedTwice: counts.filter((n) => n > 1).length,
    };
  } finally {
    await sys.shutdown();
  }
}

async function main(): Promise<void> {
  const [threads = 200, cache = 20] = positionals().slice(0, 2).map(Number);
  const slotList = (positionals()[2] ?? '10,4').split(',').map(Number);
  const sliceMs = Number(positionals()[3] ?? 150);
  const rows: Row[] = [];
  for (const slots of slotList) rows.push(await measure(threads, cache, slots, sliceMs));
  console.log(`\n${threads} new threads at once, workflow cache ${cache}, first slice ~${sliceMs} ms`);
  console.log(
    '| slots | all parked after | workflow tasks timed out | threads with one | dispatches | calls dispatched twice |',
  );
  console.log('|--:|--:|--:|--:|--:|--:|');
  for (const r of rows)
    console.log(
      `| ${r.slots} | ${(r.parkedMs / 1000).toFixed(1)} s | ${r.timedOutTasks} | ${r.threadsWithTimeout} | ${r.dispatches} | ${r.dispatchedTwice} |`,
    );
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
