/**
 * `migrate`: moves parked threads onto the release the workers now run (issue 39; docs/upgrading.md, "Moving threads
 * forward"). Prints progress on stderr, one line per thread not moved, and the cutoff to resume with.
 */
import type { Command } from 'commander';
import type { MigrateReport } from '../../client/migrate';
import { CliError } from '../errors';
import type { Out } from '../format';
import { toStderr } from '../terminal-text';
import { withClient } from '../with-client';

interface MigrateFlags {
  before?: string;
  concurrency: string;
  limit?: string;
  timeoutMs: string;
  dryRun?: boolean;
  json?: boolean;
}

/** A positive integer flag, or a clear error naming it. */
function count(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CliError(`${flag} must be a positive integer`);
  return Number(value);
}

function cutoff(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new CliError(`--before must be a date (ISO 8601), got '${value.slice(0, 60)}'`);
  return d;
}

export function registerMigrate(program: Command, out: Out): void {
  program
    .command('migrate')
    .description(
      "move the task queue's running threads whose run started before --before (default: now) onto new runs on the " +
        'release the workers now run: each continues as new with all its state at its next pause between slices. ' +
        'Run it once every worker runs the new release; safe while threads work; resume with the same --before',
    )
    .argument('[threads...]', 'only these threads (default: every thread of the task queue)')
    .option('--before <time>', 'only threads whose current run started before this ISO 8601 time (default: now)')
    .option('--concurrency <n>', 'threads moving at once', '32')
    .option('--limit <n>', 'move at most this many threads, then stop (resume with the same --before)')
    .option('--timeout-ms <ms>', 'how long one thread may take to move before it is reported', '120000')
    .option('--dry-run', 'only count and list the threads that would move')
    .option('--json', 'print the report as JSON: {before, found, moved, closed, notMoved, complete, threads}')
    .action(async (threads: string[], flags: MigrateFlags, cmd: Command) => {
      const before = cutoff(flags.before);
      const options = {
        ...(threads.length > 0 && { threadIds: threads }),
        ...(before && { before }),
        concurrency: count(flags.concurrency, '--concurrency'),
        timeoutMs: count(flags.timeoutMs, '--timeout-ms'),
        ...(flags.limit !== undefined && { limit: count(flags.limit, '--limit') }),
        ...(flags.dryRun && { dryRun: true }),
      };
      const report = await withClient(cmd, async (client) => {
        let shown = 0;
        return client.migrateThreads({
          ...options,
          onProgress: (p) => {
            // A line per 100 threads (or 10 s): enough to see a long sweep move, not one per thread.
            if (p.found - shown >= 100 || p.elapsedMs >= (shown / 100 + 1) * 10_000) {
              shown = p.found;
              toStderr(`migrate: ${p.found} found, ${p.moved} moved, ${p.closed} closed, ${p.notMoved} not moved\n`);
            }
          },
        });
      });
      if (flags.json) out(JSON.stringify(report));
      else summary(report, Boolean(flags.dryRun), out);
      // Threads not moved need attention (the lines above say why): a failing exit code for scripts.
      if (report.notMoved > 0) process.exitCode = 1;
    });
}

function summary(r: MigrateReport, dryRun: boolean, out: Out): void {
  if (dryRun) {
    for (const t of r.threads) out(`${t.threadId} (run ${t.runId})`);
    out(`${r.found} thread(s) would move (runs started before ${r.before})`);
    return;
  }
  for (const t of r.threads) if (t.outcome === 'not_moved') out(`not moved: ${t.threadId}: ${t.reason ?? ''}`);
  out(
    `${r.moved} moved, ${r.closed} closed, ${r.notMoved} not moved of ${r.found} found in ${(r.elapsedMs / 1000).toFixed(1)} s` +
      (r.complete ? '' : `; resume with --before ${r.before}`),
  );
}
