/** `start [message]`: start a root thread, optionally with a first user message; prints its id. */
import type { Command } from 'commander';
import type { Out } from '../format';
import { parseJson } from '../input-text';
import { priorityOf, priorityOptions, type PriorityFlags } from '../priority-flags';
import { CliError } from '../errors';
import { type Target } from '../target';
import { toStderr } from '../terminal-text';
import { withClient } from '../with-client';

const uiLink = (target: Target, threadId: string) =>
  target.uiUrl
    ? `${target.uiUrl}/namespaces/${encodeURIComponent(target.namespace)}/workflows/${encodeURIComponent(threadId)}`
    : undefined;

export function registerStart(program: Command, out: Out): void {
  priorityOptions(program.command('start'))
    .description('start a root thread, optionally with a first user message; prints its id')
    .argument('[message]', 'first user message')
    .option('--thread-id <id>', 'thread id (default: a new UUID)')
    .option('--metadata <json>', 'root metadata object')
    .action(
      async (
        message: string | undefined,
        opts: { threadId?: string; metadata?: string } & PriorityFlags,
        cmd: Command,
      ) => {
        const priority = priorityOf(opts);
        await withClient(cmd, async (client, target) => {
          const metadata = opts.metadata === undefined ? undefined : parseJson('--metadata', opts.metadata);
          if (
            metadata !== undefined &&
            (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
          ) {
            throw new CliError('--metadata must be a JSON object');
          }
          const thread = await client.startThread({
            threadId: opts.threadId,
            ...(metadata !== undefined && { metadata: metadata as Record<string, unknown> }),
            ...(priority && { priority }),
          });
          if (message !== undefined) await thread.sendUserText(message);
          out(thread.threadId);
          const link = uiLink(target, thread.threadId);
          if (link) toStderr(`Temporal UI: ${link}\n`);
        });
      },
    );
}
