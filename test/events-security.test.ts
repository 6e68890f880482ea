/**
 * The live-events endpoint as an attacker meets it (security issue items 4, 10, 12): no stream without a token, a
 * per-thread capability that reads its one thread, no listening beyond loopback without a token, the Host check
 * against DNS rebinding, a connection cap, request timeouts that leave long streams alone, an unknown or malformed
 * `after` that does not replay the buffered past, and thread ids up to Temporal's workflow id limit. Real HTTP on
 * loopback; no Temporal server needed.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { take } from './take-events';
import type { ThreadEvent } from '../src/core/types';
import { eventsEndpointOf } from '../src/cli/events-endpoint';
import { CliError } from '../src/cli/errors';
import { LocalEventHub } from '../src/events/event-hub';
import { localEventsToken } from '../src/events/local-token';
import { EventLog } from '../src/events/event-log';
import { type EventServer, type EventServerOptions, startEventServer } from '../src/events/event-server';
import { eventsCapability } from '../src/events/events-auth';
import { type LiveEvent, remoteThreadEvents, EventStreamError } from '../src/events/live-events';

const TOKEN = 'events-test-token-0123456789abcdef';
const delta = (threadId: string, n: number): ThreadEvent => ({ threadId, type: 'text_delta', text: `t${n} ` });
/** A slice's start as a slice emits it: `running`, then its model call. */
const sliceStart = (threadId: string, sliceId: string): ThreadEvent[] => [
  { threadId, type: 'status', status: 'running' },
  { threadId, type: 'completion_started', sliceId, at: 0 },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(
  options: EventServerOptions = { token: TOKEN },
): Promise<{ hub: LocalEventHub; server: EventServer }> {
  const hub = new LocalEventHub();
  const server = await startEventServer(new EventLog(hub), options);
  cleanups.push(() => server.close());
  return { hub, server };
}

function subscribe(...args: Parameters<typeof remoteThreadEvents>): AsyncGenerator<LiveEvent> {
  const it = remoteThreadEvents(...args);
  cleanups.push(async () => void (await it.return(undefined)));
  return it;
}

/**
 * The status (and body, unless it is a stream) of a GET, with the headers given; a stream is cut as soon as its status
 * is known, so an endpoint that wrongly streams does not hold the test.
 */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      if (res.headers['content-type']?.startsWith('text/event-stream')) {
        resolve({ status: res.statusCode!, body: '' });
        req.destroy();
        return;
      }
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('live events: who may read', () => {
  it('refuses a stream without credentials, even when no token was configured', async () => {
    const { server } = await serve({});
    expect((await get(`${server.url}/threads/a/events`)).status).toBe(401);
    expect((await get(`${server.url}/threads/a/events`, { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  it('makes up a token when none is configured, and it reads the thread', async () => {
    const { hub, server } = await serve({});
    expect(server.token.length).toBeGreaterThanOrEqual(32);
    // A slice in progress: a subscriber gets it first, whenever it attaches.
    for (const e of sliceStart('a', 's')) hub.emit(e);
    const events = subscribe(server.url, 'a', { token: server.token });
    expect((await take(events, 1))[0]?.threadId).toBe('a');
  });

  it("reads one thread with that thread's capability, and no other", async () => {
    const { hub, server } = await serve();
    const capability = eventsCapability(TOKEN, 'alice');
    expect(capability).not.toContain(TOKEN);
    for (const e of sliceStart('alice', 's')) hub.emit(e);
    const events = subscribe(server.url, 'alice', { token: capability });
    expect((await take(events, 1))[0]?.threadId).toBe('alice');
    expect((await get(`${server.url}/threads/bob/events`, { authorization: `Bearer ${capability}` })).status).toBe(401);
    // A browser's EventSource sends no header: the capability goes in the query, and only for its thread.
    const q = (thread: string, value: string) => `${server.url}/threads/${thread}/events?access_token=${value}`;
    expect((await get(q('alice', capability))).status).toBe(200);
    expect((await get(q('bob', capability))).status).toBe(401);
    // The token itself is not taken from a URL (it would end up in logs and browser history).
    expect((await get(q('alice', TOKEN))).status).toBe(401);
    // Under another token, the same thread's capability reads nothing.
    expect(
      (
        await get(`${server.url}/threads/alice/events`, {
          authorization: `Bearer ${eventsCapability('other', 'alice')}`,
        })
      ).status,
    ).toBe(401);
  });

  it('will not listen beyond loopback without a token, or with a short one', async () => {
    const hub = new LocalEventHub();
    await expect(startEventServer(new EventLog(hub), { host: '0.0.0.0' })).rejects.toThrow(/token/);
    await expect(startEventServer(new EventLog(hub), { host: '0.0.0.0', token: 'x'.repeat(31) })).rejects.toThrow(
      /at least 32 characters, this one has 31/,
    );
    // On loopback the token guards against other local users only; any non-empty one will do.
    const local = await startEventServer(new EventLog(hub), { token: 'short' });
    await local.close();
  });

  it('answers 421 to a Host that is not loopback (DNS rebinding)', async () => {
    const { server } = await serve();
    const rebound = await get(`${server.url}/threads/a/events`, {
      host: 'attacker.example',
      authorization: `Bearer ${TOKEN}`,
    });
    expect(rebound.status).toBe(421);
    expect((await get(`${server.url}/health`, { host: 'attacker.example:80' })).status).toBe(421);
  });
});

describe('live events: what a reader gets', () => {
  it('does not replay the buffered past for an `after` from an unknown worker: a gap, then the running slice', async () => {
    const { hub, server } = await serve();
    for (const e of sliceStart('a', 'old')) hub.emit(e);
    hub.emit(delta('a', 1));
    hub.emit({ threadId: 'a', type: 'completion_finished', sliceId: 'old' });
    const events = subscribe(server.url, 'a', { token: TOKEN, after: 'deadbeef.3' });
    const gap = await take(events, 1);
    expect(gap.map((e) => e.type)).toEqual(['replay_gap']);
    hub.emit(delta('a', 2));
    const next = await take(events, 1);
    expect(next.map((e) => (e.type === 'text_delta' ? e.text : e.type))).toEqual(['t2 ']);
  });

  it('refuses a malformed `after` with 400 instead of replaying', async () => {
    const { hub, server } = await serve();
    hub.emit(delta('a', 1));
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const after of ['x y', '../../etc', 'abc', `${'a'.repeat(65)}.1`]) {
      const res = await get(`${server.url}/threads/a/events?after=${encodeURIComponent(after)}`, auth);
      expect(res.status, after).toBe(400);
    }
    expect((await get(`${server.url}/threads/a/events`, { ...auth, 'last-event-id': 'not an id' })).status).toBe(400);
  });

  it('streams thread ids up to 1000 bytes (Temporal workflow id limit), and says why for longer ones', async () => {
    const { hub, server } = await serve();
    for (const id of ['x'.repeat(1000), 'é'.repeat(500), 'a/b?c#d'.repeat(100)]) {
      for (const e of sliceStart(id, 's')) hub.emit(e);
      const events = subscribe(server.url, id, { token: TOKEN });
      const [first] = await take(events, 1);
      expect(first?.threadId).toBe(id);
      await events.return(undefined);
    }
    const tooLong = await get(`${server.url}/threads/${'x'.repeat(1001)}/events`, {
      authorization: `Bearer ${TOKEN}`,
    });
    expect(tooLong.status).toBe(414);
    expect(tooLong.body).toMatch(/1000 bytes/);
  });
});

describe('live events: listener limits', () => {
  it('caps open connections', async () => {
    const { server } = await serve({ token: TOKEN, maxConnections: 2 });
    // Ended by the signal: a generator waiting for its next event cannot be returned from outside.
    const stop = new AbortController();
    cleanups.push(async () => stop.abort());
    for (const id of ['a', 'b']) void remoteThreadEvents(server.url, id, { token: TOKEN, signal: stop.signal }).next();
    // Once both streams are open, a third connection is closed as it arrives.
    await expect
      .poll(
        async () =>
          get(`${server.url}/health`).then(
            () => 'served',
            () => 'refused',
          ),
        { timeout: 5000 },
      )
      .toBe('refused');
  });

  it('does not cut a long stream at the request timeout', async () => {
    const { hub, server } = await serve({ token: TOKEN, requestTimeoutMs: 300 });
    for (const e of sliceStart('a', 's')) hub.emit(e);
    const events = subscribe(server.url, 'a', { token: TOKEN });
    const [first, second] = await take(events, 2);
    expect([first?.type, second?.type]).toEqual(['status', 'completion_started']);
    await new Promise((r) => setTimeout(r, 1200));
    hub.emit(delta('a', 1));
    const [later] = await take(events, 1);
    // One stream, never reconnected: the id follows the replayed ones'.
    expect(later?.eventId?.split('.')[1]).toBe('3');
  });

  it('tells the client why it was refused', async () => {
    const { server } = await serve();
    const err = await take(subscribe(server.url, 'a', { token: 'wrong' }), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventStreamError);
    expect((err as EventStreamError).message).toMatch(/HTTP 401/);
    expect((err as EventStreamError).message).toMatch(/token/);
  });
});

describe('dev and worker: the endpoint token', () => {
  it('is INFINITY_EVENTS_TOKEN when set, else one kept 0600 in the data directory and reused', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'events-token-')), 'data');
    expect(eventsEndpointOf({}, dir, { INFINITY_EVENTS_TOKEN: 'from-env' })?.options.token).toBe('from-env');
    const first = eventsEndpointOf({}, dir, {});
    expect(first?.tokenSource).toBe(join(dir, 'events-token'));
    expect(statSync(join(dir, 'events-token')).mode & 0o777).toBe(0o600);
    expect(eventsEndpointOf({ eventsPort: '0' }, dir, {})?.options.token).toBe(first?.options.token);
    expect(localEventsToken(dir).token).toBe(first?.options.token);
    expect(eventsEndpointOf({ events: false }, dir, {})).toBeUndefined();
  });

  it('refuses a non-loopback --events-host without INFINITY_EVENTS_TOKEN, or with a short one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'events-token-'));
    expect(() => eventsEndpointOf({ eventsHost: '0.0.0.0' }, dir, {})).toThrow(CliError);
    expect(() => eventsEndpointOf({ eventsHost: '0.0.0.0' }, dir, {})).toThrow(/INFINITY_EVENTS_TOKEN/);
    expect(() => eventsEndpointOf({ eventsHost: '0.0.0.0' }, dir, { INFINITY_EVENTS_TOKEN: 't' })).toThrow(
      /needs an INFINITY_EVENTS_TOKEN of at least 32 characters, this one has 1/,
    );
    const strong = 'e'.repeat(32);
    expect(eventsEndpointOf({ eventsHost: '0.0.0.0' }, dir, { INFINITY_EVENTS_TOKEN: strong })?.options).toMatchObject({
      host: '0.0.0.0',
      token: strong,
    });
  });
});

describe('live events: browsers', () => {
  it('lets a listed origin read a stream with a capability in the query, and no other origin', async () => {
    const { server } = await serve({ token: TOKEN, origins: ['https://app.example'] });
    const url = `${server.url}/threads/a/events?access_token=${eventsCapability(TOKEN, 'a')}`;
    const headersOf = (origin: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const req = request(url, { headers: { origin } }, (res) => {
          resolve(res.headers);
          req.destroy();
        });
        req.on('error', reject);
        req.end();
      });
    expect((await headersOf('https://app.example'))['access-control-allow-origin']).toBe('https://app.example');
    expect((await headersOf('https://other.example'))['access-control-allow-origin']).toBeUndefined();
  });
});
