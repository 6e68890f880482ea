/**
 * `npx tsx bench/probes/turn-breakdown.ts <temporal.sqlite> <id-prefix> [...]`: where a thread's time went between
 * each input and the workflow task that ran its slice, from the Temporal histories a benchmark run left in its dev
 * server's database (`$TMPDIR/infinity-bench-*`). For every signal of every workflow whose id starts with a prefix:
 * signal → workflow task scheduled (the history service), → started (matching and a free worker slot), → completed
 * (the worker: activation, the local slice, its commit). Made for the priorities phase (`prio-user-with-`), where
 * slices run locally inside their workflow task.
 */
import { forEachHistory, is, ms } from '../lib/histories';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

const STEPS = ['signal→WFT scheduled', 'scheduled→started', 'started→completed', 'total'] as const;

async function main() {
  const [dbFilename, ...prefixes] = process.argv.slice(2);
  if (!dbFilename || prefixes.length === 0)
    throw new Error('usage: turn-breakdown.ts <temporal.sqlite> <id-prefix> [...]');
  let parts = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as Record<(typeof STEPS)[number], number[]>;
  await forEachHistory(
    dbFilename,
    prefixes,
    (_prefix, events) =>
      events.forEach((e, i) => {
        if (!is(e, 'WORKFLOW_EXECUTION_SIGNALED', 26)) return;
        // A signal that lands while a task runs is seen by the next task: take the first task scheduled after it.
        const rest = events.slice(i + 1);
        const from = rest.findIndex((x) => is(x, 'WORKFLOW_TASK_SCHEDULED', 5));
        if (from < 0) return;
        const scheduled = rest[from]!;
        const started = rest.slice(from).find((x) => is(x, 'WORKFLOW_TASK_STARTED', 6));
        const completed = rest.slice(from).find((x) => is(x, 'WORKFLOW_TASK_COMPLETED', 7));
        if (!started || !completed) return;
        parts['signal→WFT scheduled'].push(ms(scheduled) - ms(e));
        parts['scheduled→started'].push(ms(started) - ms(scheduled));
        parts['started→completed'].push(ms(completed) - ms(started));
        parts.total.push(ms(completed) - ms(e));
      }),
    (prefix) => {
      const f = (xs: number[], p: number) => percentile(xs, p).toFixed(1);
      console.log(`${prefix}: ${parts.total.length} signals`);
      for (const [k, xs] of Object.entries(parts))
        console.log(`  ${k.padEnd(22)} p50 ${f(xs, 50)} ms, p90 ${f(xs, 90)} ms`);
      parts = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as typeof parts;
    },
  );
}

runMain(main);
