/**
 * How `tail` follows a thread: the events token it may use on this machine, what a refusal of live events means, and
 * the committed history to follow where live events are not available (no endpoint, or it goes away).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isLoopbackHost } from '../http/listener';
import { readLocalEventsToken } from '../events/local-token';
import { dataDirOf, type Target, type TargetFlags } from './target';
import type { ThreadHandle } from '../client/thread-handle';
import type { EventStreamError } from '../events/live-events';
import type { HistoryItem } from '../core/types';

/**
 * Without a token given (`--events-token`, `INFINITY_EVENTS_TOKEN`), the one `dev` and `worker` keep in the data
 * directory, when every events endpoint is on this machine: it is theirs, and it is sent nowhere else.
 */
export function withLocalEventsToken(target: Target, flags: TargetFlags): Target {
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
export function refusalOf(e: EventStreamError): string {
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

/**
 * Follows committed items (when no live events can be had), each to `show` (as a line or as JSON, as the rest of the
 * output); returns when `stop` says so.
 */
export async function followHistory(
  thread: ThreadHandle,
  from: number,
  show: (item: HistoryItem) => void,
  stop: () => Promise<boolean>,
  pollMs: number,
): Promise<void> {
  let seen = from;
  for (;;) {
    const items = await thread.history();
    for (const item of items.slice(seen)) show(item);
    seen = items.length;
    if (await stop()) return;
    await sleep(pollMs);
  }
}
