/** `deliver <thread>`: deliver a tool result or a subscription event to a thread (never creates a thread). */
import type { Command } from 'commander';
import type { InputMessage } from '../../core/types';
import { subscriptionEvent, toolResult } from '../../tools/messages';
import type { Out } from '../format';
import { parseJson, readSource, textOf } from '../input-text';
import { CliError } from '../errors';
import { withClient } from '../with-client';

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

export function registerDeliver(program: Command, out: Out): void {
  program
    .command('deliver')
    .description('deliver a tool result or subscription event (never creates a thread)')
    .argument('<thread>', 'thread id')
    .option('--call <toolCallId>', 'the tool call it answers (or the subscription call of an event)')
    .option('--text <text>', 'the result or event text')
    .option('--file <path>', 'read the result or event text from a file (`-` reads stdin)')
    .option('--event', 'a later event of a subscription, not the call result')
    .option('--associative', 'with --event: inline the event instead of a child thread')
    .option('--final', 'with --event: the last event of the subscription')
    .option('--subscription', 'the result starts a subscription')
    .option('--id <id>', 'message id (dedup)')
    .option('--message <file>', 'a whole InputMessage as JSON (`-` reads stdin); other options are ignored')
    .option('--wait', 'wait until the thread takes the input and say whether it was dropped (the default)')
    .option('--no-ack', 'signal and return at once, without waiting for the thread to take the input')
    .action(async (threadId: string, opts: Record<string, string | boolean | undefined>, cmd: Command) => {
      if (opts.wait === true && opts.ack === false) throw new CliError('give --wait or --no-ack, not both');
      let message: InputMessage;
      if (typeof opts.message === 'string') {
        message = { ...(parseJson('--message', readSource(opts.message)) as InputMessage), threadId };
      } else {
        if (typeof opts.call !== 'string')
          throw new CliError('deliver needs --call and --text or --file (or --message)');
        const text = textOf(str(opts.text), str(opts.file), 'deliver needs --text or --file (or --message)');
        const call = { threadId, toolCallId: opts.call };
        message = opts.event
          ? subscriptionEvent(call, text, { associative: opts.associative === true, final: opts.final === true })
          : toolResult(call, text, {
              subscription: opts.subscription === true,
              ...(typeof opts.id === 'string' && { id: opts.id }),
            });
      }
      await withClient(
        cmd,
        async (client) => {
          const r = await client.deliver(message, { acknowledge: opts.ack !== false });
          if (!r.delivered) {
            throw new CliError(
              r.reason === 'closed'
                ? `thread ${threadId} is closed; the input was not delivered`
                : `thread ${threadId} dropped the input: ${r.reason}`,
            );
          }
          out(
            r.acknowledged
              ? `accepted ${message.id}${r.deferred ? ' (held back until the pending call is answered)' : ''}`
              : `delivered ${message.id}`,
          );
        },
        { stage: true },
      );
    });
}
