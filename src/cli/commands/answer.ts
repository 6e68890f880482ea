/** `answer <thread> <choice> [index]`: answer a tool's pending choice, or dismiss it without an index. */
import type { Command } from 'commander';
import type { Out } from '../format';
import { CliError } from '../errors';
import { withClient } from '../with-client';

export function registerAnswer(program: Command, out: Out): void {
  program
    .command('answer')
    .description(
      "answer a tool's pending choice (see `status`); without an index the choice is dismissed (its default)",
    )
    .argument('<thread>', 'thread id')
    .argument('<choice>', 'choice id')
    .argument('[index]', '0-based index of the chosen option')
    .action(async (threadId: string, choiceId: string, index: string | undefined, _opts: unknown, cmd: Command) => {
      const selected = index === undefined ? undefined : Number(index);
      if (selected !== undefined && (!/^\d+$/.test(index!) || !Number.isInteger(selected)))
        throw new CliError(`index must be a whole number, got '${index}'`);
      await withClient(cmd, async (client) => {
        out(`answered ${choiceId} with ${await client.thread(threadId).answerChoice(choiceId, selected)}`);
      });
    });
}
