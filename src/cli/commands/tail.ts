/**
 * `tail <thread>`: follow a thread: the committed history, then live events from the worker's events endpoint. Where
 * live events are not available (no endpoint, or it goes away), it follows the committed history instead. A fork's or
 * a child's history starts with what it inherits, marked as `history` marks it (`--own`: its own items only); that
 * part never changes, so it is printed once, before the thread's own items are followed.
 */
import type { Command } from 'commander';
import type { HistoryItem, ThreadEvent } from '../../core/types';
import type { Followed } from '../../client/follow';
import { EventStreamError } from '../../events/live-events';
import { colour, EventPrinter, type Out } from '../format';
import { inheritedLines, inheritedOf, itemLine } from '../inherited';
import { followHistory, refusalOf, withLocalEventsToken } from '../tail';
import { CliError } from '../errors';
import { openClient, resolveTarget, type TargetFlags } from '../target';
import { toStderr } from '../terminal-text';

interface TailOptions {
  json?: boolean;
  history?: boolean;
  own?: boolean;
  after?: string;
  untilIdle?: boolean;
  pollMs?: string;
}

export function registerTail(program: Command, write: (s: string) => void, out: Out): void {
  program
    .command('tail')
    .description('follow a thread: committed history, then live events (tokens included)')
    .argument('<thread>', 'thread id')
    .option(
      '--json',
      'one JSON object per line: {"history":item} first (inherited ones with "inheritedFrom"), then live events with their eventId',
    )
    .option('--no-history', 'live events only')
    .option('--own', "only the thread's own history, not what a fork or a child inherits")
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
      const { client, store, close } = await openClient(target);
      try {
        const thread = client.thread(threadId);
        const status = await thread.status(); // fails clearly for an unknown thread
        const withHistory = opts.history !== false && opts.after === undefined && target.store !== undefined;
        const format = { json: opts.json === true, wrapped: true };
        const showItem = (item: HistoryItem) => out(itemLine(item, format));
        // What a fork or a child inherits, before its own items: committed for good, so read once.
        if (withHistory && store && !opts.own)
          inheritedLines(threadId, await inheritedOf(store, threadId), format).forEach((line) => out(line));
        let shown = 0;
        const settled = async () => {
          const s = await thread.status();
          return s.status === 'closed' || (s.status === 'idle' && s.queued === 0);
        };
        const idleNow = status.status === 'closed' || (status.status === 'idle' && status.queued === 0);
        // Resuming (--after) replays what followed, which ends with the thread's own idle status if it got there.
        if (opts.untilIdle && idleNow && opts.after === undefined) {
          if (withHistory) for (const item of await thread.history()) showItem(item);
          return;
        }
        const fallback = async (why: string) => {
          if (!target.store) throw new Error(`${why}, and no conversation store to follow instead (--store)`);
          toStderr(colour.yellow(`${why}; following committed history instead\n`));
          if (withHistory && shown === 0) {
            const items = await thread.history();
            items.forEach(showItem);
            shown = items.length;
          }
          await followHistory(
            thread,
            shown,
            showItem,
            async () => (opts.untilIdle ? settled() : false),
            Number(opts.pollMs),
          );
        };
        // Awaited here, inside the try: a promise returned unawaited would meet a store and connection `finally`
        // had closed already.
        if (!target.eventsUrl) return await fallback('no live events endpoint (--events-url)');

        const printer = new EventPrinter(write);
        // With a store, the committed history and live events are joined by the thread's follow (no gap, no repeat);
        // `--after` resumes a stream where an earlier tail left it.
        // `--until-idle`: a slice's `idle` event comes from the worker before the workflow has taken the slice's
        // result, so `status()` may still say running then, and no event may follow. Once an idle event was seen, the
        // status is asked again every `--poll-ms` until it settles, which ends the follow.
        const settle = new AbortController();
        let idleSeen = false;
        let checking = false;
        const poll = opts.untilIdle
          ? setInterval(() => {
              if (!idleSeen || checking || settle.signal.aborted) return;
              checking = true;
              void settled()
                .then(
                  (done) => done && settle.abort(),
                  () => undefined,
                )
                .finally(() => (checking = false));
            }, Number(opts.pollMs))
          : undefined;
        const steps: AsyncIterable<Followed> =
          target.store && opts.after === undefined
            ? thread.follow({ history: withHistory, signal: settle.signal })
            : thread.events({ ...(opts.after && { after: opts.after }), signal: settle.signal });
        try {
          for await (const step of steps) {
            if ('history' in step) {
              showItem(step.history);
              shown++;
              continue;
            }
            if (opts.json) out(JSON.stringify(step));
            else printer.print(step as ThreadEvent);
            if (opts.untilIdle && ((step.type === 'status' && step.status === 'idle') || step.type === 'replay_gap')) {
              idleSeen = true;
              if (await settled()) return;
            }
          }
        } catch (e) {
          if (!(e instanceof EventStreamError)) throw e;
          await fallback(`live events unavailable (${refusalOf(e)})`);
        } finally {
          clearInterval(poll);
        }
      } finally {
        await close();
      }
    });
}
