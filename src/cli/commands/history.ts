/** `history <thread>`: print the committed history of a thread, read from the conversation store. */
import type { Command } from 'commander';
import { historyLine, type Out } from '../format';
import { storeOpen } from '../lazy';
import { CliError } from '../errors';
import { withClient } from '../with-client';

export function registerHistory(program: Command, out: Out): void {
  program
    .command('history')
    .description('the committed history of a thread (needs the conversation store: --store)')
    .argument('<thread>', 'thread id')
    .option('--json', 'one JSON item per line')
    .option('--full', 'do not shorten long texts')
    .option('--branch <k>', 'the items the k-th rewind of the thread archived (1 for the first)')
    .action(async (threadId: string, opts: { json?: boolean; full?: boolean; branch?: string }, cmd: Command) => {
      const branch = opts.branch === undefined ? undefined : Number(opts.branch);
      if (branch !== undefined && !(Number.isSafeInteger(branch) && branch >= 1))
        throw new CliError(`--branch needs a branch number (1, 2, ...), got '${opts.branch}'`);
      await withClient(cmd, async (client, target) => {
        if (!target.store)
          throw new CliError('history reads the conversation store: pass --store <sqlite file> (or run next to `dev`)');
        const items = await client.thread(threadId).history(branch === undefined ? {} : { branch });
        if (items.length === 0)
          throw new CliError(
            `thread ${threadId} has no committed history in ${storeOpen().describeStore(target.store)}`,
          );
        for (const item of items) out(opts.json ? JSON.stringify(item) : historyLine(item, opts.full));
      });
    });
}
