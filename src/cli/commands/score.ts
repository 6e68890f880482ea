/** `score <thread> <name> <value>`: attach an outcome score to a thread or one of its slices (docs/evals.md). */
import type { Command } from 'commander';
import type { Out } from '../format';
import { evalAction } from '../lazy-actions';

export function registerScore(program: Command, out: Out): void {
  program
    .command('score')
    .description('store an outcome score with a thread or slice, listed by `eval` and `scores` (writes --store)')
    .argument('<thread>', 'thread id')
    .argument('<name>', 'what is scored, e.g. merged')
    .argument('<value>', 'a number, or true/false (1/0)')
    .option('--slice <n|id>', 'the slice: its number (3 or slice-3) or its id (default: the whole thread)')
    .option('--note <text>', 'who scored, why, a link')
    .option('--json', 'print the stored score as JSON')
    .action(
      async (
        threadId: string,
        name: string,
        value: string,
        opts: { slice?: string; note?: string; json?: boolean },
        cmd: Command,
      ) => evalAction().runScore(threadId, name, value, opts, cmd, out),
    );
}
