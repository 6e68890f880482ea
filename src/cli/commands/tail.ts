/**
 * `tail <thread>`: follow a thread: the committed history, then live events from the worker's events endpoint. Where
 * live events are not available (no endpoint, or it goes away), it follows the committed history instead.
 */
import type { Command } from 'commander';
import type { ThreadEvent } from '../../core/types';
import { EventStreamError } from '../../events/live-events';
import { colour, EventPrinter, historyLine, type Out } from '../format';
import { followHistory, refusalOf, withLocalEventsToken } from '../tail';
import { CliError, openClient, resolveTarget, type TargetFlags } from '../target';

interface TailOptions {
  json?: boolean;
  history?: boolean;
  after?: string;
  untilIdle?: boolean;
  pollMs?: string;
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
            // Live events were lost (the stream reconnected past the worker's buffer): what they showed is committed
            // by now, so the items committed since the history printed above follow, instead of nothing.
            if (e.type === 'replay_gap' && target.store && opts.history !== false && opts.after === undefined) {
              const items = await thread.history();
              for (const item of items.slice(committed))
                out(opts.json ? JSON.stringify({ history: item }) : historyLine(item));
              committed = items.length;
            }
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
