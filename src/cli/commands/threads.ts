/** `threads`: list threads, optionally filtered by status, parent, kind, or stuck. */
import type { Command } from 'commander';
import type { AgentStatus, ThreadKind } from '../../core/types';
import type { Out } from '../format';
import { CliError } from '../errors';
import { withClient } from '../with-client';

const STATUSES: readonly AgentStatus[] = [
  'idle',
  'running',
  'waiting_tool',
  'failed',
  'closed',
  'over_budget',
  'agent_unavailable',
];
const KINDS: readonly ThreadKind[] = ['root', 'child', 'event', 'compaction'];

/** A flag's value checked against its allowed values: a typo is a usage error, not an empty list. */
function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new CliError(`${flag} must be one of ${allowed.join(', ')}; got '${value}'`);
  return value as T;
}

export function registerThreads(program: Command, out: Out): void {
  program
    .command('threads')
    .description('list threads, optionally filtered')
    .option('--status <status>', 'idle | running | waiting_tool | failed | closed | over_budget | agent_unavailable')
    .option('--agent <name>', "threads of this agent ('default': threads that name none), by AgentName")
    .option('--parent <threadId>', 'children of this thread')
    .option('--kind <kind>', 'root | child | event | compaction')
    .option('--stuck', 'only threads whose workflow task keeps failing, e.g. after a bad deploy (docs/upgrading.md)')
    .option('--json', 'one JSON object per line')
    .action(
      async (
        opts: { status?: string; parent?: string; kind?: string; agent?: string; stuck?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        await withClient(cmd, async (client) => {
          const status = oneOf('--status', opts.status, STATUSES);
          const kind = oneOf('--kind', opts.kind, KINDS);
          const filter = {
            ...(status && { status }),
            ...(kind && { kind }),
            ...(opts.parent && { parentThreadId: opts.parent }),
            ...(opts.agent && { agent: opts.agent }),
            ...(opts.stuck && { stuck: true }),
          };
          for await (const t of client.listThreads(filter)) {
            const columns = [
              t.threadId,
              t.kind ?? '-',
              t.status ?? '-',
              t.agent ?? '-',
              t.parentThreadId ?? '',
              ...(t.problems ?? []),
            ];
            out(opts.json ? JSON.stringify(t) : columns.join('\t').trimEnd());
          }
        });
      },
    );
}
