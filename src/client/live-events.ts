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
  /** Ends the stream (the generator returns) when aborted. */
  signal?: AbortSignal;
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
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    while (!options.signal?.aborted) {
      while (queue.length > 0) {
        const next = queue.shift()!;
        if (next instanceof EventStreamError) throw next;
        yield next;
      }
      if (options.signal?.aborted) return;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    source.close();
  }
}

/**
 * Live events of a thread from several workers (any of them may run its next slice), merged as they arrive. Each
 * event's `eventId` is then a cursor over all of them (`<id>~<id>…`, one position per worker), which `after` takes
 * back to resume every stream exactly where it was.
 */
export async function* mergedThreadEvents(baseUrls: readonly string[], threadId: string, options: RemoteEventsOptions = {}): AsyncGenerator<LiveEvent> {
  if (baseUrls.length === 1) {
    yield* remoteThreadEvents(baseUrls[0]!, threadId, options);
    return;
  }
  const positions = new Map<string, string>(); // epoch → last id seen
  for (const id of options.after?.split('~').filter(Boolean) ?? []) positions.set(id.split('.')[0]!, id);
  // A generator waiting for its next event cannot be returned from outside: an abort signal ends them instead.
  const stop = new AbortController();
  const streams = baseUrls.map((url) => remoteThreadEvents(url, threadId, { ...options, signal: stop.signal }));
  const queue: (LiveEvent | Error)[] = [];
  let wake: (() => void) | undefined;
  const pump = async (stream: AsyncGenerator<LiveEvent>) => {
    try {
      for await (const e of stream) {
        queue.push(e);
        wake?.();
      }
    } catch (e) {
      queue.push(e instanceof Error ? e : new Error(String(e)));
      wake?.();
    }
  };
  const pumps = streams.map(pump);
  try {
    for (;;) {
      while (queue.length > 0) {
        const next = queue.shift()!;
        if (next instanceof Error) throw next;
        if (next.eventId) positions.set(next.eventId.split('.')[0]!, next.eventId);
        yield { ...next, eventId: [...positions.values()].join('~') };
      }
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  } finally {
    stop.abort();
    await Promise.allSettled(pumps);
  }
}
