/**
 * `history <thread>`: print the committed history of a thread, read from the conversation store. A fork's or a child's
 * starts with what it inherits, marked as such (`--own`: its own items only); see docs/cli.md, "History of forks and
 * children".
 */
import type { Command } from 'commander';
import type { Out } from '../format';
import { CliError } from '../errors';
import { inheritedLines, inheritedOf, itemLine, noItemsLine } from '../inherited';
import { storeOpen, temporalClient } from '../lazy';
import { withClient } from '../with-client';

interface HistoryOptions {
  json?: boolean;
  full?: boolean;
  own?: boolean;
  branch?: string;
}

export function registerHistory(program: Command, out: Out): void {
  program
    .command('history')
    .description(
      "the committed history of a thread; a fork's or a child's starts with what it inherits (needs the conversation store: --store)",
    )
    .argument('<thread>', 'thread id')
    .option('--json', 'one JSON item per line; inherited items carry "inheritedFrom": the thread they come from')
    .option('--full', 'do not shorten long texts')
    .option('--own', "only the thread's own items, not what a fork or a child inherits")
    .option('--branch <k>', 'the items the k-th rewind of the thread archived (1 for the first)')
    .action(async (threadId: string, opts: HistoryOptions, cmd: Command) => {
      const branch = opts.branch === undefined ? undefined : Number(opts.branch);
      if (branch !== undefined && !(Number.isSafeInteger(branch) && branch >= 1))
        throw new CliError(`--branch needs a branch number (1, 2, ...), got '${opts.branch}'`);
      await withClient(cmd, async (client, target, store) => {
        if (!target.store)
          throw new CliError('history reads the conversation store: pass --store <sqlite file> (or run next to `dev`)');
        const where = storeOpen().describeStore(target.store);
        if (!store) throw new CliError(`no conversation store at ${where} (no such file)`);
        const thread = client.thread(threadId);
        if (branch !== undefined) {
          for (const item of await thread.history({ branch })) out(itemLine(item, opts));
          return;
        }
        const inherited = await inheritedOf(store, threadId);
        const own = await thread.history();
        // No record and no items: a thread whose first slice has not committed yet, or no thread at all.
        if (!inherited.known && own.length === 0) {
          const exists = await thread.workflow.describe().then(
            () => true,
            (e: unknown) => {
              if (e instanceof temporalClient().WorkflowNotFoundError) return false;
              throw e;
            },
          );
          if (!exists)
            throw new CliError(
              `thread ${threadId} has no committed history in ${where}, and no workflow of that id in namespace ${target.namespace}`,
            );
        }
        if (!opts.own) inheritedLines(threadId, inherited, opts).forEach((line) => out(line));
        for (const item of own) out(itemLine(item, opts));
        if (own.length === 0 && !opts.json) out(noItemsLine(inherited, opts.own === true));
      });
    });
}
