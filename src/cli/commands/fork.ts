/** `fork <thread> --at <slice|item|now>`: a new root thread whose history is the source's up to a point (issue 28 §1). */
import type { Command } from 'commander';
import type { ForkAt } from '../../client/fork';
import type { Out } from '../format';
import { CliError } from '../errors';
import { withClient } from '../with-client';

/** `--at`: an item count (digits), `now`, or a slice (`slice-<n>` of the source, or a whole slice id). */
export function parseForkAt(value: string): ForkAt {
  if (/^\d+$/.test(value)) return Number(value);
  if (value === '') throw new CliError('--at needs an item count, a slice (slice-<n>) or now');
  return value;
}

export function registerFork(program: Command, out: Out): void {
  program
    .command('fork')
    .description(
      "fork a thread: a new root thread whose history is the source's up to --at (shared in the store, not copied), " +
        'then its own (needs the conversation store: --store)',
    )
    .argument('<thread>', 'the source thread id')
    .requiredOption('--at <slice|item|now>', 'fork point: an item count, slice-<n> (or a slice id), or now')
    .option('--as <id>', "the fork's thread id (default: a random UUID)")
    .option('--send <text>', 'a user text the fork answers first')
    .option('--keep-pending', 'leave a call pending at the fork point pending in the fork (default: interrupted)')
    .option('--agent <name>', "the fork's agent: the same conversation with another agent (default: the source's)")
    .option('--json', 'print the fork as JSON: {threadId, forkedFrom}')
    .action(
      async (
        source: string,
        opts: { at: string; as?: string; send?: string; keepPending?: boolean; agent?: string; json?: boolean },
        cmd: Command,
      ) => {
        const at = parseForkAt(opts.at);
        await withClient(
          cmd,
          async (client, target) => {
            if (!target.store)
              throw new CliError('fork writes the conversation store: pass --store <file|url> (or run next to `dev`)');
            const fork = await client.forkThread(source, {
              at,
              ...(opts.as !== undefined && { threadId: opts.as }),
              ...(opts.send !== undefined && { input: opts.send }),
              ...(opts.keepPending && { pendingCall: 'keep' as const }),
              ...(opts.agent !== undefined && { agent: opts.agent }),
            });
            const status = await fork.status();
            if (opts.json) out(JSON.stringify({ threadId: fork.threadId, forkedFrom: status.forkedFrom }));
            else
              out(
                `forked ${source} at item ${status.forkedFrom?.at ?? '?'} as ${fork.threadId}` +
                  (status.pendingCall ? ` (call ${status.pendingCall.id} ${status.pendingCall.name} pending)` : ''),
              );
          },
          { stage: true },
        );
      },
    );
}
