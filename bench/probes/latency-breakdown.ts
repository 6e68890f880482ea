/**
 * `npx tsx bench/probes/latency-breakdown.ts <temporal.sqlite> [id-prefix ...]`: where the time between a tool result
 * and the next completion went, from the Temporal histories a benchmark run left in its dev server's database (the run
 * prints nothing about it; its work directory is `$TMPDIR/infinity-bench-*`). For each workflow whose id starts with a
 * prefix (default: the latency phase's `ours-lat-` and `v01-lat-`), the last signal before the final activity:
 * signal → workflow task started (server), → workflow task completed (worker), → activity started.
 */
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../../src/devserver/server';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

type Event = { eventType?: unknown; eventTime?: { seconds?: unknown; nanos?: number | null } | null };
const ms = (e: Event) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
const is = (e: Event, name: string, code: number) =>
  String(e.eventType) === String(code) || String(e.eventType) === `EVENT_TYPE_${name}`;

async function main() {
  const [dbFilename, ...prefixes] = process.argv.slice(2);
  if (!dbFilename) throw new Error('usage: latency-breakdown.ts <temporal.sqlite> [id-prefix ...]');
  const server = await startDevServer({ ui: false, dbFilename });
  try {
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    for (const prefix of prefixes.length > 0 ? prefixes : ['ours-lat-', 'v01-lat-']) {
      const parts: Record<string, number[]> = {
        'signal→WFT started': [],
        'WFT started→completed': [],
        'WFT completed→activity started': [],
        total: [],
      };
      for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` })) {
        const events = ((await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ??
          []) as Event[];
        const lastActivity = events
          .map((e, i) => (is(e, 'ACTIVITY_TASK_SCHEDULED', 10) ? i : -1))
          .filter((i) => i >= 0)
          .at(-1);
        if (lastActivity === undefined) continue;
        const signal = events
          .slice(0, lastActivity)
          .map((e, i) => (is(e, 'WORKFLOW_EXECUTION_SIGNALED', 26) ? i : -1))
          .filter((i) => i >= 0)
          .at(-1);
        if (signal === undefined) continue;
        const after = events.slice(signal);
        const started = after.find((e) => is(e, 'WORKFLOW_TASK_STARTED', 6));
        const completed = after.find((e) => is(e, 'WORKFLOW_TASK_COMPLETED', 7));
        const activity = events.slice(lastActivity).find((e) => is(e, 'ACTIVITY_TASK_STARTED', 11));
        if (!started || !completed || !activity) continue;
        parts['signal→WFT started']!.push(ms(started) - ms(events[signal]!));
        parts['WFT started→completed']!.push(ms(completed) - ms(started));
        parts['WFT completed→activity started']!.push(ms(activity) - ms(completed));
        parts.total!.push(ms(activity) - ms(events[signal]!));
      }
      const f = (xs: number[], p: number) => percentile(xs, p).toFixed(1);
      console.log(`${prefix}* (${parts.total!.length} workflows)`);
      for (const [k, xs] of Object.entries(parts))
        console.log(`  ${k.padEnd(32)} p50 ${f(xs, 50).padStart(7)} ms   p99 ${f(xs, 99).padStart(7)} ms`);
    }
  } finally {
    await server.stop();
  }
}

runMain(main);
