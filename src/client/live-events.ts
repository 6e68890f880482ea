/**
 * Live events of a thread from a worker's events endpoint (server-sent events), for clients in other processes.
 * The EventSource reconnects by itself and sends `Last-Event-ID`, so the worker replays exactly what was missed.
 */
import { EventSource } from 'eventsource';
import type { ThreadEvent } from '../core/types';

/** A live event; `eventId` (from a worker's endpoint) can resume a later subscription right after it. */
export type LiveEvent = ThreadEvent & { eventId?: string };

export interface RemoteEventsOptions {
  /** Resume after this event id (from an earlier {@link LiveEvent}). */
  after?: string;
  /** Bearer token of the endpoint. */
  token?: string;
}

/** The endpoint refused or vanished for good (wrong URL or token): EventSource gives up on those. */
export class EventStreamError extends Error {
  override readonly name = 'EventStreamError';
}

export async function* remoteThreadEvents(baseUrl: string, threadId: string, options: RemoteEventsOptions = {}): AsyncGenerator<LiveEvent> {
  const url = new URL(`/threads/${encodeURIComponent(threadId)}/events`, baseUrl);
  if (options.after) url.searchParams.set('after', options.after);
  const token = options.token;
  const source = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, ...(token && { authorization: `Bearer ${token}` }) } }),
  });
  const queue: (LiveEvent | EventStreamError)[] = [];
  let wake: (() => void) | undefined;
  const push = (e: LiveEvent | EventStreamError) => {
    queue.push(e);
    wake?.();
  };
  source.onmessage = (m) => push({ ...(JSON.parse(m.data as string) as ThreadEvent), eventId: m.lastEventId });
  source.addEventListener('gap', () => push({ threadId, type: 'replay_gap' }));
  source.onerror = (e) => {
    // A dropped connection is retried by EventSource; a refusal (status, content type) closes it for good.
    if (source.readyState === EventSource.CLOSED) push(new EventStreamError(`events of ${threadId} at ${baseUrl}: ${e.message ?? 'closed'}${e.code ? ` (HTTP ${e.code})` : ''}`));
  };
  try {
    for (;;) {
      while (queue.length > 0) {
        const next = queue.shift()!;
        if (next instanceof EventStreamError) throw next;
        yield next;
      }
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  } finally {
    source.close();
  }
}
