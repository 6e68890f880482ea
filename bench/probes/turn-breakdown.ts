/**
 * `npx tsx bench/probes/turn-breakdown.ts <temporal.sqlite> <id-prefix> [...]`: where a thread's time went between
 * each input and the workflow task that ran its slice, from the Temporal histories a benchmark run left in its dev
 * server's database (`$TMPDIR/infinity-bench-*`). For every signal of every workflow whose id starts with a prefix:
 * signal → workflow task scheduled (the history service), → started (matching and a free worker slot), → completed
 * (the worker: activation, the local slice, its commit). Made for the priorities phase (`prio-user-with-`), where
 * slices run locally inside their workflow task.
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
  if (!dbFilename || prefixes.length === 0)
    throw new Error('usage: turn-breakdown.ts <temporal.sqlite> <id-prefix> [...]');
  const server = await startDevServer({ ui: false, dbFilename });
  try {
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    for (const prefix of prefixes) {
      const parts: Record<string, number[]> = {
        'signal→WFT scheduled': [],
        'scheduled→started': [],
        'started→completed': [],
        total: [],
      };
      for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` })) {
        const events = ((await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ??
          []) as Event[];
        events.forEach((e, i) => {
          if (!is(e, 'WORKFLOW_EXECUTION_SIGNALED', 26)) return;
          const after = events.slice(i + 1);
          // A signal that lands while a task runs is seen by the next task: take the first task scheduled after it.
          const scheduledAt = after.findIndex((x) => is(x, 'WORKFLOW_TASK_SCHEDULED', 5));
          if (scheduledAt < 0) return;
          const rest = after.slice(scheduledAt);
          const started = rest.find((x) => is(x, 'WORKFLOW_TASK_STARTED', 6));
          const completed = rest.find((x) => is(x, 'WORKFLOW_TASK_COMPLETED', 7));
          if (!started || !completed) return;
          const scheduled = rest[0]!;
          parts['signal→WFT scheduled']!.push(ms(scheduled) - ms(e));
          parts['scheduled→started']!.push(ms(started) - ms(scheduled));
          parts['started→completed']!.push(ms(completed) - ms(started));
          parts.total!.push(ms(completed) - ms(e));
        });
      }
      console.log(`${prefix}: ${parts.total!.length} signals`);
      for (const [name, xs] of Object.entries(parts))
        console.log(
          `  ${name.padEnd(22)} p50 ${percentile(xs, 50).toFixed(1)} ms, p90 ${percentile(xs, 90).toFixed(1)} ms`,
        );
    }
  } finally {
    await server.stop();
  }
}

runMain(main);
