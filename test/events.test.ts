/**
 * The worker's live events endpoint over real HTTP: replay-then-live for late attachers, resumption after an event
 * id, and a connection dropped mid-stream that the client rides out without losing or repeating an event.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { take } from './take-events';
import { type LiveEvent, mergedThreadEvents, remoteThreadEvents, EventStreamError } from '../src/events/live-events';
import type { ThreadEvent } from '../src/core/types';
import { LocalEventHub } from '../src/events/event-hub';
import { EventLog } from '../src/events/event-log';
import { buildEventApp, startEventServer, type EventServer } from '../src/events/event-server';

const delta = (threadId: string, n: number): ThreadEvent => ({ threadId, type: 'text_delta', text: `t${n} ` });
/** A slice's start as a slice emits it: `running`, then its model call. */
const sliceStart = (threadId: string, sliceId: string): ThreadEvent[] => [
  { threadId, type: 'status', status: 'running' },
  { threadId, type: 'completion_started', sliceId, at: 0 },
];

const cleanups: (() => Promise<void>)[] = [];

/** The endpoints' token here, unless a test gives its own. */
const TOKEN = 'events-test-token';

/** A subscription (with {@link TOKEN} unless told otherwise) that the test's cleanup closes (an open EventSource would keep reconnecting). */
function subscribe(
  url: string,
  threadId: string,
  options: Parameters<typeof remoteThreadEvents>[2] = {},
): AsyncGenerator<LiveEvent> {
  const it = remoteThreadEvents(url, threadId, { token: TOKEN, ...options });
  cleanups.push(async () => void (await it.return(undefined)));
  return it;
}

function merged(
  urls: string[],
  threadId: string,
  options: Parameters<typeof mergedThreadEvents>[2] = {},
): AsyncGenerator<LiveEvent> {
  const it = mergedThreadEvents(urls, threadId, { token: TOKEN, ...options });
  cleanups.push(async () => void (await it.return(undefined)));
  return it;
}
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(token = TOKEN): Promise<{ hub: LocalEventHub; server: EventServer }> {
  const hub = new LocalEventHub();
  const server = await startEventServer(new EventLog(hub), { token });
  cleanups.push(() => server.close());
  return { hub, server };
}

describe('live events endpoint', () => {
  it('replays the slice in progress to a late subscriber, then streams live, per thread', async () => {
    const { hub, server } = await serve();
    for (const e of sliceStart('a', 's0')) hub.emit(e);
    hub.emit({ threadId: 'a', type: 'completion_finished', sliceId: 's0' });
    hub.emit({ threadId: 'a', type: 'status', status: 'running' });
    hub.emit({ threadId: 'a', type: 'tool_result', toolCallId: 'c1', text: 'green' }); // the slice's input
    hub.emit({ threadId: 'a', type: 'completion_started', sliceId: 's1', at: 3 });
    hub.emit(delta('a', 1));
    hub.emit(delta('b', 1)); // another thread
    const events = subscribe(server.url, 'a');
    const first = await take(events, 4); // the replay: the running slice so far, from its start
    expect(first.map((e) => e.type)).toEqual(['status', 'tool_result', 'completion_started', 'text_delta']);
    expect(first[2]).toMatchObject({ sliceId: 's1' });
    hub.emit(delta('a', 2));
    hub.emit({ threadId: 'a', type: 'completion_finished', sliceId: 's1' });
    const live = await take(events, 2);
    await events.return(undefined);
    expect(live.map((e) => (e.type === 'text_delta' ? e.text : e.type))).toEqual(['t2 ', 'completion_finished']);
    const ids = [...first, ...live].map((e) => Number(e.eventId!.split('.')[1]));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
  });

  it('resumes after an event id with exactly the events that came later', async () => {
    const { hub, server } = await serve();
    for (let i = 0; i < 5; i++) hub.emit(delta('a', i));
    const { epoch } = (await (await fetch(`${server.url}/health`)).json()) as { epoch: string };
    const all = await take(subscribe(server.url, 'a', { after: `${epoch}.0` }), 5);
    expect(all.map((e) => (e as { text: string }).text)).toEqual(['t0 ', 't1 ', 't2 ', 't3 ', 't4 ']);
    const rest = await take(subscribe(server.url, 'a', { after: all[2]!.eventId! }), 2);
    expect(rest.map((e) => e.eventId)).toEqual([all[3]!.eventId, all[4]!.eventId]);
  });

  it('reports a gap when asked to resume from a position it no longer has, then gives the slice in progress', async () => {
    const { hub, server } = await serve();
    hub.emit(delta('a', 0)); // before the running slice: not replayed (committed history has it)
    for (const e of sliceStart('a', 's')) hub.emit(e);
    hub.emit(delta('a', 1));
    const events = subscribe(server.url, 'a', { after: 'oldepoch.7' });
    const got = await take(events, 4);
    expect(got.map((e) => e.type)).toEqual(['replay_gap', 'status', 'completion_started', 'text_delta']);
  });

  it('rides out a dropped connection without losing or repeating an event', async () => {
    const hub = new LocalEventHub();
    const app = buildEventApp(new EventLog(hub), { token: TOKEN });
    await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(async () => {
      app.server.closeAllConnections();
      await app.close();
    });
    const { port } = app.server.address() as { port: number };
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const events = subscribe(`http://127.0.0.1:${port}`, 'a', { onOpen: opened });
    const received: LiveEvent[] = [];
    const consumer = (async () => {
      for await (const e of events) {
        received.push(e);
        if (received.length === 200) return;
      }
    })();
    // Once the subscription is installed (the stream open), stream, cutting every connection halfway.
    await open;
    hub.emit({ threadId: 'a', type: 'completion_started', sliceId: 's' });
    await expect.poll(() => received.length, { timeout: 5000 }).toBe(1);
    for (let i = 1; i < 100; i++) hub.emit(delta('a', i));
    await expect.poll(() => received.length, { timeout: 5000 }).toBeGreaterThan(50);
    app.server.closeAllConnections();
    for (let i = 100; i < 200; i++) hub.emit(delta('a', i)); // emitted while the client is disconnected
    await consumer;
    expect(received.map((e) => (e.type === 'text_delta' ? e.text : e.type))).toEqual([
      'completion_started',
      ...Array.from({ length: 199 }, (_, i) => `t${i + 1} `),
    ]);
    expect(new Set(received.map((e) => e.eventId)).size).toBe(200);
  });

  it('refuses a wrong token, and the client says so instead of retrying forever', async () => {
    const { server } = await serve('s3cret');
    expect((await fetch(`${server.url}/threads/a/events`)).status).toBe(401);
    await expect(take(subscribe(server.url, 'a', { token: 'wrong' }), 1)).rejects.toBeInstanceOf(EventStreamError);
    const { hub, server: open } = await serve('s3cret');
    for (const e of sliceStart('a', 's')) hub.emit(e);
    expect((await take(subscribe(open.url, 'a', { token: 's3cret' }), 2))[1]?.type).toBe('completion_started');
  });
});

describe('several workers', () => {
  it('merges their streams and resumes every one of them from a single cursor', async () => {
    const a = await serve();
    const b = await serve();
    const urls = [a.server.url, b.server.url];
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const first = merged(urls, 'th', { onOpen: opened });
    const got = take(first, 1); // starts the streams
    await open; // both subscribed: what either worker emits from now on arrives
    a.hub.emit({ threadId: 'th', type: 'completion_started', sliceId: 's1' }); // slice 1 on worker A
    await got;
    a.hub.emit(delta('th', 1));
    b.hub.emit({ threadId: 'th', type: 'completion_started', sliceId: 's2' }); // slice 2 on worker B
    b.hub.emit(delta('th', 2));
    const all = [...(await got), ...(await take(first, 3))];
    await first.return(undefined);
    // Each worker's events keep their order; between workers, arrival order is the network's.
    const shown = all.map((e) =>
      e.type === 'text_delta' ? e.text : `${e.type}:${(e as { sliceId?: string }).sliceId}`,
    );
    expect([...shown].sort()).toEqual(['completion_started:s1', 'completion_started:s2', 't1 ', 't2 ']);
    expect(shown.indexOf('t1 ')).toBeGreaterThan(shown.indexOf('completion_started:s1'));
    expect(shown.indexOf('t2 ')).toBeGreaterThan(shown.indexOf('completion_started:s2'));
    const cursor = all.at(-1)!.eventId!;
    expect(cursor.split('~')).toHaveLength(2);
    // Missed while away: one event on each worker.
    a.hub.emit(delta('th', 3));
    b.hub.emit(delta('th', 4));
    const resumed = await take(merged(urls, 'th', { after: cursor }), 2);
    expect(resumed.map((e) => (e as { text: string }).text).sort()).toEqual(['t3 ', 't4 ']);
  });
});

describe('in-process hub', () => {
  const collect = (hub: LocalEventHub, threadId: string) => {
    const got: ThreadEvent[] = [];
    const off = hub.subscribe(threadId, (e) => got.push(e), { replay: true });
    cleanups.push(async () => off());
    return got;
  };

  it('replays the slice in progress to a late subscriber, from its start, and nothing between slices', () => {
    const hub = new LocalEventHub();
    for (const e of sliceStart('a', 's0')) hub.emit(e);
    hub.emit({ threadId: 'a', type: 'completion_finished', sliceId: 's0', length: 3 });
    hub.emit({ threadId: 'a', type: 'status', status: 'idle' });
    expect(collect(hub, 'a')).toEqual([]); // between slices
    hub.emit({ threadId: 'a', type: 'status', status: 'running' });
    hub.emit({ threadId: 'a', type: 'user_input', text: 'next' });
    hub.emit({ threadId: 'a', type: 'completion_started', sliceId: 's1', at: 3 });
    hub.emit(delta('a', 1));
    hub.emit(delta('b', 1)); // another thread
    const late = collect(hub, 'a');
    expect(late.map((e) => e.type)).toEqual(['status', 'user_input', 'completion_started', 'text_delta']);
    hub.emit(delta('a', 2));
    expect(late.at(-1)).toEqual(delta('a', 2)); // then live, with nothing between
    // A subscriber without `replay` (and the hub that only feeds a log) gets live events only.
    const plain: ThreadEvent[] = [];
    const off = hub.subscribe('a', (e) => plain.push(e));
    cleanups.push(async () => off());
    expect(plain).toEqual([]); // slice s1 is still in progress
    hub.emit(delta('a', 3));
    expect(plain).toEqual([delta('a', 3)]);
    const quiet = new LocalEventHub({ remember: false });
    for (const e of sliceStart('a', 's')) quiet.emit(e);
    expect(collect(quiet, 'a')).toEqual([]);
  });

  it('forgets a slice too long to replay (a follower reads it from the store)', () => {
    const hub = new LocalEventHub();
    for (const e of sliceStart('a', 's')) hub.emit(e);
    for (let i = 0; i < 5_000; i++) hub.emit(delta('a', i));
    expect(collect(hub, 'a')).toEqual([]);
  });
});
