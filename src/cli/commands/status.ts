/** `status <thread>`: print the state of a thread: status, pending call, children, usage, ... */
import type { Command } from 'commander';
import { type Out, statusLines } from '../format';
import { withClient } from '../with-client';

export function registerStatus(program: Command, out: Out): void {
  program
    .command('status')
    .description('the state of a thread: status, pending call, children, usage, ...')
    .argument('<thread>', 'thread id')
    .option('--json', 'as JSON')
    .action(async (threadId: string, opts: { json?: boolean }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const s = await client.thread(threadId).status();
        if (opts.json) out(JSON.stringify(s, null, 2));
        else statusLines(s).forEach((l) => out(l));
      });
    });
}
