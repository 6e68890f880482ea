/**
 * Live events of a thread from a worker's events endpoint (server-sent events), for clients in other processes.
 * The EventSource reconnects by itself and sends `Last-Event-ID`, so the worker replays exactly what was missed.
 */
import { EventSource } from 'eventsource';
import type { ThreadEvent } from '../core/types';
import { AsyncQueue } from './async-queue';

/** A live event; `eventId` (from a worker's endpoint) can resume a later subscription right after it. */
export type LiveEvent = ThreadEvent & { eventId?: string };

export interface RemoteEventsOptions {
  /** Resume after this event id (from an earlier {@link LiveEvent}). */
  after?: string;
  /** Bearer token of the endpoint, or the thread's capability (`eventsCapability(token, threadId)`). */
  token?: string;
  /** Ends the stream (the generator returns) when aborted. */
  signal?: AbortSignal;
  /**
   * Called once, when the subscription is in place (every endpoint's, for several): every event from then on reaches
   * this stream.
   */
  onOpen?: () => void;
}

/** The endpoint refused or vanished for good (wrong URL or token): EventSource gives up on those. */
export class EventStreamError extends Error {
  override readonly name = 'EventStreamError';
  constructor(
    message: string,
    /** The HTTP status of the refusal, when the endpoint answered (401: token, 414: thread id, 400: `after`). */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The `error` of an endpoint's JSON refusal, or its text, kept short. */
async function reasonOf(res: Response): Promise<string | undefined> {
  const text = (await res.text().catch(() => '')).trim();
  if (text === '') return undefined;
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error === 'string') return error.slice(0, 300);
  } catch {
    // Not JSON: the text itself.
  }
  return text.slice(0, 300);
}

export async function* remoteThreadEvents(
  baseUrl: string,
  threadId: string,
  options: RemoteEventsOptions = {},
): AsyncGenerator<LiveEvent> {
  const url = new URL(`/threads/${encodeURIComponent(threadId)}/events`, baseUrl);
  if (options.after) url.searchParams.set('after', options.after);
  const token = options.token;
  // Why the endpoint refused, read from its answer: EventSource reports only the status.
  let refusal: string | undefined;
  const source = new EventSource(url, {
    fetch: async (input, init) => {
      const res = await fetch(input, {
        ...init,
        headers: { ...init.headers, ...(token && { authorization: `Bearer ${token}` }) },
      });
      if (!res.ok) refusal = await reasonOf(res.clone());
      return res;
    },
  });
  const queue = new AsyncQueue<LiveEvent>();
  // The endpoint subscribes before it answers (event-server.ts): open means subscribed. Reconnects open again.
  let opened = false;
  source.onopen = () => {
    if (!opened) options.onOpen?.();
    opened = true;
  };
  source.onmessage = (m) => queue.push({ ...(JSON.parse(m.data as string) as ThreadEvent), eventId: m.lastEventId });
  source.addEventListener('gap', () => queue.push({ threadId, type: 'replay_gap' }));
  source.onerror = (e) => {
    // A dropped connection is retried by EventSource; a refusal (status, content type) closes it for good.
    if (source.readyState === EventSource.CLOSED) {
      const what = e.code ? `HTTP ${e.code}${refusal ? `: ${refusal}` : ''}` : (e.message ?? 'closed');
      const shownId = threadId.length > 80 ? `${threadId.slice(0, 77)}...` : threadId;
      queue.fail(new EventStreamError(`events of ${shownId} at ${baseUrl}: ${what}`, e.code));
    }
  };
  const onAbort = () => queue.close();
  if (options.signal?.aborted) queue.close();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    yield* queue;
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
export async function* mergedThreadEvents(
  baseUrls: readonly string[],
  threadId: string,
  options: RemoteEventsOptions = {},
): AsyncGenerator<LiveEvent> {
  if (baseUrls.length === 1) {
    yield* remoteThreadEvents(baseUrls[0]!, threadId, options);
    return;
  }
  const positions = new Map<string, string>(); // epoch → last id seen
  for (const id of options.after?.split('~').filter(Boolean) ?? []) positions.set(id.split('.')[0]!, id);
  // A generator waiting for its next event cannot be returned from outside: an abort signal ends them instead.
  const stop = new AbortController();
  let open = 0;
  const onOpen = () => {
    if (++open === baseUrls.length) options.onOpen?.();
  };
  const streams = baseUrls.map((url) => remoteThreadEvents(url, threadId, { ...options, signal: stop.signal, onOpen }));
  const queue = new AsyncQueue<LiveEvent>();
  const pumps = streams.map(async (stream) => {
    try {
      for await (const e of stream) queue.push(e);
    } catch (e) {
      queue.fail(e);
    }
  });
  try {
    for await (const next of queue) {
      if (next.eventId) positions.set(next.eventId.split('.')[0]!, next.eventId);
      yield { ...next, eventId: [...positions.values()].join('~') };
    }
  } finally {
    stop.abort();
    await Promise.allSettled(pumps);
  }
}
