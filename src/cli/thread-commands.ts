/** The CLI's client commands: start, send, deliver, history, status, threads, compact. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { AgentClient } from '../client/agent-client';
import type { AgentStatus, InputMessage, ThreadKind } from '../core/types';
import { priorityViolation, type ThreadPriority } from '../core/priority';
import { describeStore } from '../store/open';
import { subscriptionEvent, toolResult } from '../tools/messages';
import { historyLine, statusLines } from './format';
import { CliError, openClient, resolveTarget, type Target, type TargetFlags } from './target';

export type Out = (line: string) => void;

/** Runs `fn` with a client for the command's target, always releasing it; `stage`: see {@link openClient}. */
export async function withClient<T>(
  cmd: Command,
  fn: (client: AgentClient, target: Target) => Promise<T>,
  options: { stage?: boolean } = {},
): Promise<T> {
  const target = await resolveTarget(cmd.optsWithGlobals<TargetFlags>());
  const { client, close } = await openClient(target, options);
  try {
    return await fn(client, target);
  } finally {
    await close();
  }
}

function parseJson(what: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** `-` reads standard input. */
function readSource(path: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (e) {
    throw new CliError(
      `cannot read ${path === '-' ? 'standard input' : path}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

const STATUSES: readonly AgentStatus[] = ['idle', 'running', 'waiting_tool', 'failed', 'closed', 'over_budget'];
const KINDS: readonly ThreadKind[] = ['root', 'child', 'event', 'compaction'];

/** A flag's value checked against its allowed values: a typo is a usage error, not an empty list. */
function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new CliError(`${flag} must be one of ${allowed.join(', ')}; got '${value}'`);
  return value as T;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** The text of an input: given inline or read from a file, one of the two. */
function textOf(inline: string | undefined, file: string | undefined, missing: string): string {
  if (inline !== undefined && file !== undefined) throw new CliError('give the text or --file, not both');
  if (file !== undefined) return readSource(file);
  if (inline === undefined) throw new CliError(missing);
  return inline;
}

const uiLink = (target: Target, threadId: string) =>
  target.uiUrl
    ? `${target.uiUrl}/namespaces/${encodeURIComponent(target.namespace)}/workflows/${encodeURIComponent(threadId)}`
    : undefined;

interface PriorityFlags {
  priority?: string;
  fairnessKey?: string;
  fairnessWeight?: string;
}

/** `--priority`, `--fairness-key`, `--fairness-weight` on a command that may start a thread. */
const priorityOptions = (cmd: Command) =>
  cmd
    .option(
      '--priority <1-5>',
      'task priority if this starts the thread: 1 first, 5 last (default 2; children run at 4)',
    )
    .option('--fairness-key <key>', "the thread's fair share of the task queue (default: its id; children inherit it)")
    .option('--fairness-weight <weight>', "the share's weight, 0.001 to 1000 (default 1)");

function priorityOf(flags: PriorityFlags): ThreadPriority | undefined {
  const number = (name: string, v: string) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new CliError(`${name} must be a number, got '${v}'`);
    return n;
  };
  const p: ThreadPriority = {
    ...(flags.priority !== undefined && { priorityKey: number('--priority', flags.priority) }),
    ...(flags.fairnessKey !== undefined && { fairnessKey: flags.fairnessKey }),
    ...(flags.fairnessWeight !== undefined && { fairnessWeight: number('--fairness-weight', flags.fairnessWeight) }),
  };
  const violation = priorityViolation(p);
  if (violation) throw new CliError(violation);
  return Object.keys(p).length > 0 ? p : undefined;
}

export function registerThreadCommands(program: Command, out: Out): void {
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
          if (link) process.stderr.write(`Temporal UI: ${link}\n`);
        });
      },
    );

  priorityOptions(program.command('send'))
    .description('send user text to a thread (creates the thread if it does not exist)')
    .argument('<thread>', 'thread id')
    .argument('[text...]', 'the text (or --file)')
    .option(
      '--file <path>',
      'read the text from a file (`-` reads stdin), exactly as it is; large texts are staged in --store',
    )
    .option('--id <id>', 'message id, to make a resend idempotent')
    .action(
      async (threadId: string, words: string[], opts: { id?: string; file?: string } & PriorityFlags, cmd: Command) => {
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
              }),
            );
          },
          { stage: true },
        );
      },
    );

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

  program
    .command('history')
    .description('the committed history of a thread (needs the conversation store: --store)')
    .argument('<thread>', 'thread id')
    .option('--json', 'one JSON item per line')
    .option('--full', 'do not shorten long texts')
    .action(async (threadId: string, opts: { json?: boolean; full?: boolean }, cmd: Command) => {
      await withClient(cmd, async (client, target) => {
        if (!target.store)
          throw new CliError('history reads the conversation store: pass --store <sqlite file> (or run next to `dev`)');
        const items = await client.thread(threadId).history();
        if (items.length === 0)
          throw new CliError(`thread ${threadId} has no committed history in ${describeStore(target.store)}`);
        for (const item of items) out(opts.json ? JSON.stringify(item) : historyLine(item, opts.full));
      });
    });

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

  program
    .command('threads')
    .description('list threads, optionally filtered')
    .option('--status <status>', 'idle | running | waiting_tool | failed | closed | over_budget')
    .option('--parent <threadId>', 'children of this thread')
    .option('--kind <kind>', 'root | child | event | compaction')
    .option('--stuck', 'only threads whose workflow task keeps failing, e.g. after a bad deploy (docs/upgrading.md)')
    .option('--json', 'one JSON object per line')
    .action(
      async (
        opts: { status?: string; parent?: string; kind?: string; stuck?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        await withClient(cmd, async (client) => {
          const status = oneOf('--status', opts.status, STATUSES);
          const kind = oneOf('--kind', opts.kind, KINDS);
          const filter = {
            ...(status && { status }),
            ...(kind && { kind }),
            ...(opts.parent && { parentThreadId: opts.parent }),
            ...(opts.stuck && { stuck: true }),
          };
          for await (const t of client.listThreads(filter)) {
            const columns = [t.threadId, t.kind ?? '-', t.status ?? '-', t.parentThreadId ?? '', ...(t.problems ?? [])];
            out(opts.json ? JSON.stringify(t) : columns.join('\t').trimEnd());
          }
        });
      },
    );

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
