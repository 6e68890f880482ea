/**
 * `tail`: the committed history, then live events from the worker's events endpoint. Where live events are not
 * available (no endpoint, or it goes away), it follows the committed history instead.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { isLoopbackHost } from '../http/listener';
import { readLocalEventsToken } from '../events/local-token';
import { CliError, dataDirOf, openClient, resolveTarget, type Target, type TargetFlags } from './target';
import type { ThreadHandle } from '../client/agent-client';
import { EventStreamError } from '../events/live-events';
import type { ThreadEvent } from '../core/types';
import { colour, EventPrinter, historyLine } from './format';
import type { Out } from './thread-commands';

interface TailOptions {
  json?: boolean;
  history?: boolean;
  after?: string;
  untilIdle?: boolean;
  pollMs?: string;
}

/**
 * Without a token given (`--events-token`, `INFINITY_EVENTS_TOKEN`), the one `dev` and `worker` keep in the data
 * directory, when every events endpoint is on this machine: it is theirs, and it is sent nowhere else.
 */
function withLocalEventsToken(target: Target, flags: TargetFlags): Target {
  if (target.eventsToken || !target.eventsUrl) return target;
  const urls = target.eventsUrl
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  const local = urls.every((u) => {
    try {
      return isLoopbackHost(new URL(u).hostname);
    } catch {
      return false;
    }
  });
  const token = local ? readLocalEventsToken(dataDirOf(flags)) : undefined;
  return token ? { ...target, eventsToken: token } : target;
}

/** Why live events were refused, with what to do about it. */
function refusalOf(e: EventStreamError): string {
  switch (e.status) {
    case 401:
      return `${e.message}; pass the endpoint's token with --events-token or INFINITY_EVENTS_TOKEN`;
    case 414:
      return `${e.message}; that worker takes shorter thread ids (an older release?)`;
    case 421:
      return `${e.message}; the endpoint does not serve that host name (its --events-host, or a proxy's name)`;
    default:
      return e.message;
  }
}

/** Follows committed items (when no live events can be had); returns when `stop` says so. */
async function followHistory(
  thread: ThreadHandle,
  from: number,
  show: (line: string) => void,
  stop: () => Promise<boolean>,
  pollMs: number,
): Promise<void> {
  let seen = from;
  for (;;) {
    const items = await thread.history();
    for (const item of items.slice(seen)) show(historyLine(item));
    seen = items.length;
    if (await stop()) return;
    await sleep(pollMs);
  }
}

export function registerTail(program: Command, write: (s: string) => void, out: Out): void {
  program
    .command('tail')
    .description('follow a thread: committed history, then live events (tokens included)')
    .argument('<thread>', 'thread id')
    .option('--json', 'one JSON object per line: {"history":item} first, then live events with their eventId')
    .option('--no-history', 'live events only')
    .option('--after <eventId>', 'resume right after this live event (implies --no-history)')
    .option('--until-idle', 'exit when the thread is idle with no tool call pending')
    .option('--poll-ms <ms>', 'history polling interval without live events', '1000')
    .action(async (threadId: string, opts: TailOptions, cmd: Command) => {
      // An id as the live events hand out: <worker epoch>.<sequence>, several joined by ~ (one per worker).
      if (opts.after !== undefined && !/^[0-9a-f]{8}\.\d+(~[0-9a-f]{8}\.\d+)*$/.test(opts.after)) {
        throw new CliError(`--after takes a live event's eventId (e.g. 1a2b3c4d.17), got '${opts.after}'`);
      }
      const flags = cmd.optsWithGlobals<TargetFlags>();
      const target = withLocalEventsToken(await resolveTarget(flags), flags);
      const { client, close } = await openClient(target);
      try {
        const thread = client.thread(threadId);
        const status = await thread.status(); // fails clearly for an unknown thread
        let committed = 0;
        if (opts.history !== false && opts.after === undefined && target.store) {
          const items = await thread.history();
          for (const item of items) out(opts.json ? JSON.stringify({ history: item }) : historyLine(item));
          committed = items.length;
        }
        const settled = async () => {
          const s = await thread.status();
          return s.status === 'closed' || (s.status === 'idle' && s.queued === 0);
        };
        // Resuming (--after) replays what followed, which ends with the thread's own idle status if it got there.
        const idleNow = status.status === 'closed' || (status.status === 'idle' && status.queued === 0);
        if (opts.untilIdle && idleNow && opts.after === undefined) return;
        const fallback = async (why: string) => {
          if (!target.store) throw new Error(`${why}, and no conversation store to follow instead (--store)`);
          process.stderr.write(colour.yellow(`${why}; following committed history instead\n`));
          await followHistory(
            thread,
            committed,
            out,
            async () => (opts.untilIdle ? settled() : false),
            Number(opts.pollMs),
          );
        };
        if (!target.eventsUrl) return fallback('no live events endpoint (--events-url)');

        const printer = new EventPrinter(write);
        try {
          for await (const e of thread.events(opts.after ? { after: opts.after } : {})) {
            if (opts.json) out(JSON.stringify(e));
            else printer.print(e as ThreadEvent);
            if (
              opts.untilIdle &&
              ((e.type === 'status' && e.status === 'idle') || e.type === 'replay_gap') &&
              (await settled())
            )
              return;
          }
        } catch (e) {
          if (!(e instanceof EventStreamError)) throw e;
          await fallback(`live events unavailable (${refusalOf(e)})`);
        }
      } finally {
        await close();
      }
    });
}
