/** `send <thread> [text...]`: send user text to a thread, creating the thread if it does not exist. */
import type { Command } from 'commander';
import type { Out } from '../format';
import { textOf } from '../input-text';
import { priorityOf, priorityOptions, type PriorityFlags } from '../priority-flags';
import { CliError } from '../errors';
import { withClient } from '../with-client';

export function registerSend(program: Command, out: Out): void {
  priorityOptions(program.command('send'))
    .description('send user text to a thread (creates the thread if it does not exist)')
    .argument('<thread>', 'thread id')
    .argument('[text...]', 'the text (or --file)')
    .option(
      '--file <path>',
      'read the text from a file (`-` reads stdin), exactly as it is; large texts are staged in --store',
    )
    .option('--id <id>', 'message id, to make a resend idempotent')
    .option('--agent <name>', 'the agent of the thread if this text creates it (a running thread keeps its own)')
    .action(
      async (
        threadId: string,
        words: string[],
        opts: { id?: string; file?: string; agent?: string } & PriorityFlags,
        cmd: Command,
      ) => {
        const text = textOf(words.length > 0 ? words.join(' ') : undefined, opts.file, 'send needs the text or --file');
        if (text.trim() === '') throw new CliError('send needs a non-empty text');
        const priority = priorityOf(opts);
        await withClient(
          cmd,
          async (client) => {
            out(
              await client.sendUserText(threadId, text, {
                ...(opts.id !== undefined && { id: opts.id }),
                ...(priority && { priority }),
                ...(opts.agent !== undefined && { agent: opts.agent }),
              }),
            );
          },
          { stage: true },
        );
      },
    );
}
