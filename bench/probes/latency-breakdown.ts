/**
 * `npx tsx bench/probes/latency-breakdown.ts <temporal.sqlite> [id-prefix ...]`: where the time between a tool result
 * and the next completion went, from the Temporal histories a benchmark run left in its dev server's database (the run
 * prints nothing about it; its work directory is `$TMPDIR/infinity-bench-*`). For each workflow whose id starts with a
 * prefix (default: the latency phase's `ours-lat-` and `v01-lat-`), the last signal before the final activity:
 * signal → workflow task started (server), → workflow task completed (worker), → activity started.
 */
import { forEachHistory, is, ms } from '../lib/histories';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

const STEPS = ['signal→WFT started', 'WFT started→completed', 'WFT completed→activity started', 'total'] as const;

async function main() {
  const [dbFilename, ...prefixes] = process.argv.slice(2);
  if (!dbFilename) throw new Error('usage: latency-breakdown.ts <temporal.sqlite> [id-prefix ...]');
  let parts = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as Record<(typeof STEPS)[number], number[]>;
  await forEachHistory(
    dbFilename,
    prefixes.length > 0 ? prefixes : ['ours-lat-', 'v01-lat-'],
    (_prefix, events) => {
      const lastActivity = events
        .map((e, i) => (is(e, 'ACTIVITY_TASK_SCHEDULED', 10) ? i : -1))
        .filter((i) => i >= 0)
        .at(-1);
      if (lastActivity === undefined) return;
      const signal = events
        .slice(0, lastActivity)
        .map((e, i) => (is(e, 'WORKFLOW_EXECUTION_SIGNALED', 26) ? i : -1))
        .filter((i) => i >= 0)
        .at(-1);
      if (signal === undefined) return;
      const after = events.slice(signal);
      const started = after.find((e) => is(e, 'WORKFLOW_TASK_STARTED', 6));
      const completed = after.find((e) => is(e, 'WORKFLOW_TASK_COMPLETED', 7));
      const activity = events.slice(lastActivity).find((e) => is(e, 'ACTIVITY_TASK_STARTED', 11));
      if (!started || !completed || !activity) return;
      parts['signal→WFT started'].push(ms(started) - ms(events[signal]!));
      parts['WFT started→completed'].push(ms(completed) - ms(started));
      parts['WFT completed→activity started'].push(ms(activity) - ms(completed));
      parts.total.push(ms(activity) - ms(events[signal]!));
    },
    (prefix) => {
      const f = (xs: number[], p: number) => percentile(xs, p).toFixed(1);
      console.log(`${prefix}* (${parts.total.length} workflows)`);
      for (const [k, xs] of Object.entries(parts))
        console.log(`  ${k.padEnd(32)} p50 ${f(xs, 50).padStart(7)} ms   p99 ${f(xs, 99).padStart(7)} ms`);
      parts = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as typeof parts;
    },
  );
}

runMain(main);
