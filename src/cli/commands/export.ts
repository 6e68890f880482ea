/** `export <thread>`: a thread and what its history comes from, as one JSON file for `eval --threads <file>`. */
import type { Command } from 'commander';
import type { Out } from '../format';
import { evalAction } from '../lazy-actions';

export function registerExport(program: Command, out: Out): void {
  program
    .command('export')
    .description(
      'write a thread, its items, slices and summaries (and its ancestors’) as JSON for `eval` (reads --store)',
    )
    .argument('<thread>', 'thread id')
    .option('--out <file>', 'write to this file (mode 0600) instead of standard output')
    .action(async (threadId: string, opts: { out?: string }, cmd: Command) =>
      evalAction().runExport(threadId, opts, cmd, out),
    );
}
