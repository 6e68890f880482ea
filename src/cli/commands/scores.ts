/** `scores`: the stored outcome scores, filtered by thread, slice and name (docs/evals.md). */
import type { Command } from 'commander';
import type { Out } from '../format';
import { evalAction } from '../lazy-actions';

export function registerScores(program: Command, out: Out): void {
  program
    .command('scores')
    .description('list stored outcome scores, oldest first (reads --store)')
    .option('--thread <id>', 'of this thread only')
    .option('--slice <n|id>', 'of this slice only (a number with --thread, else its id)')
    .option('--name <name>', 'with this name only')
    .option('--json', 'one JSON object per score')
    .action(async (opts: { thread?: string; slice?: string; name?: string; json?: boolean }, cmd: Command) =>
      evalAction().runScores(opts, cmd, out),
    );
}
