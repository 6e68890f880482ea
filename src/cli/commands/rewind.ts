/** `rewind <thread> --to <slice|item>`: the thread continues from a point of its history (issue 28 §2). */
import type { Command } from 'commander';
import type { Out } from '../format';
import { CliError } from '../errors';
import { withClient } from '../with-client';

/** `--to`: an item count (digits) or a slice (`slice-<n>`, or a whole slice id). */
export function parseRewindTo(value: string): number | string {
  if (/^\d+$/.test(value)) return Number(value);
  if (value === '' || value === 'now') throw new CliError('--to needs an item count or a slice (slice-<n>)');
  return value;
}

export function registerRewind(program: Command, out: Out): void {
  program
    .command('rewind')
    .description(
      'rewind a thread: it continues from --to as if what came after never happened for the model; those items stay ' +
        'readable as an archived branch (history --branch <k>). Needs the conversation store: --store',
    )
    .argument('<thread>', 'thread id')
    .requiredOption('--to <slice|item>', 'the point: an item count, or slice-<n> (or a slice id)')
    .option('--json', 'print the result as JSON: {threadId, to, branch, archived}')
    .action(async (threadId: string, opts: { to: string; json?: boolean }, cmd: Command) => {
      const to = parseRewindTo(opts.to);
      await withClient(cmd, async (client, target) => {
        if (!target.store)
          throw new CliError('rewind reads the conversation store: pass --store <file|url> (or run next to `dev`)');
        const r = await client.rewindThread(threadId, { to });
        if (opts.json) out(JSON.stringify(r));
        else
          out(
            `rewound ${threadId} to item ${r.to}; items ${r.archived[0]}..${r.archived[1] - 1} archived as branch ` +
              `${r.branch} (history ${threadId} --branch ${r.branch})`,
          );
      });
    });
}
