/** `compact <thread>`: compact a thread now: a compaction thread summarizes its history. */
import type { Command } from 'commander';
import type { Out } from '../format';
import { withClient } from '../with-client';

export function registerCompact(program: Command, out: Out): void {
  program
    .command('compact')
    .description('compact a thread now: a compaction thread summarizes its history')
    .argument('<thread>', 'thread id')
    .action(async (threadId: string, _opts: unknown, cmd: Command) => {
      await withClient(cmd, async (client) => {
        await client.thread(threadId).compact();
        out(`compaction requested for ${threadId}`);
      });
    });
}
