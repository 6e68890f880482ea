/**
 * The callback gateway's listener and memory under hostile or careless peers: key ids that are names of
 * `Object.prototype`, a `Host` from a rebound DNS name, a client that never finishes its request, more connections than
 * the cap, view updates without end or of any shape, and bodies past the configured limit. Each gateway here is real
 * (Fastify on 127.0.0.1); its deliveries go to a recording sink, since no thread needs to take them.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { InputMessage, ThreadEvent } from '../../src/core/types';
import { checkInput, type DeliveryResult } from '../../src/inbox/deliver';
import { DEFAULT_MAX_STAGED_INPUT_BYTES } from '../../src/inbox/staging';
import { type RapGateway, type RapGatewayOptions, startRapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import { eventually } from '../helpers';
import { rawRequest } from './raw-http';

const MiB = 1024 * 1024;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Started {
  gateway: RapGateway;
  tokens: CallbackTokens;
  port: number;
  delivered: InputMessage[];
  events: ThreadEvent[];
}

async function start(options: Partial<RapGatewayOptions> = {}): Promise<Started> {
  const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
  const delivered: InputMessage[] = [];
  const events: ThreadEvent[] = [];
  const gateway = await startRapGateway({
    tokens,
    deliver: async (m): Promise<DeliveryResult> => (delivered.push(m), { delivered: true }),
    onEvent: (e) => events.push(e),
    ...options,
  });
  cleanups.push(() => gateway.close());
  const port = (gateway.app.server.address() as { port: number }).port;
  return { gateway, tokens, port, delivered, events };
}

/** One request with the headers given (fetch cannot set `Host`). */
const send = (
  port: number,
  path: string,
  body: string | undefined,
  headers: Record<string, string> = {},
  method = 'POST',
) => rawRequest(port, path, body, headers, method);

const pathOf = (url: string) => new URL(url).pathname;

/** A raw connection: what the server wrote, and whether it closed the connection. */
function rawConnection(port: number): Promise<{ socket: Socket; received: () => string; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    let text = '';
    let isClosed = false;
    const socket = connect(port, '127.0.0.1', () => resolve({ socket, received: () => text, closed: () => isClosed }));
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('close', () => (isClosed = true));
    socket.on('error', () => undefined); // a reset counts as closed
    socket.once('error', (e) => (isClosed ? undefined : reject(e)));
    cleanups.push(async () => void socket.destroy());
  });
}

describe('callback tokens and key ids', () => {
  const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

  it('treats key ids named after Object.prototype as unknown keys, not as keys', () => {
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
    const genuine = tokens.mint({ threadId: 't', callId: 'c' });
    const [, body, signature] = genuine.split('.');
    for (const id of names) {
      expect(tokens.verify(`${id}.${body}.${signature}`), id).toEqual({ ok: false, reason: 'unknown_key' });
    }
    // Nor can such a name be the current key unless it is one of the keys.
    expect(() => new CallbackTokens({ current: 'constructor', keys: { k1: newCallbackKey() } })).toThrow(
      /the current callback key 'constructor' is not among the keys/,
    );
    // A key that really has such an id works like any other.
    const own = new CallbackTokens({ current: 'constructor', keys: { constructor: newCallbackKey() } });
    expect(own.verify(own.mint({ threadId: 't', callId: 'c' }))).toMatchObject({ ok: true });
  });

  it('answers such a token with a 401 that names the reason, never a 500', async () => {
    const { gateway, port, delivered } = await start();
    const url = gateway.callbackUrl('t', 'c');
    const [, body, signature] = url.slice(url.lastIndexOf('/') + 1).split('.');
    for (const id of names) {
      const res = await send(
        port,
        `/rap/callback/${id}.${body}.${signature}`,
        JSON.stringify({ type: 'tool_result', group_id: 't', id: 'c', text: 'x' }),
      );
      expect(res, id).toEqual({ status: 401, body: JSON.stringify({ error: 'callback token refused: unknown_key' }) });
    }
    expect(delivered).toEqual([]);
  });

  it('does not tell a caller what failed inside: a 500 says so and no more', async () => {
    const { gateway, port } = await start({
      deliver: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:7233 (internal detail)')),
    });
    const res = await send(
      port,
      pathOf(gateway.callbackUrl('t', 'c')),
      JSON.stringify({ type: 'tool_result', group_id: 't', id: 'c', text: 'x' }),
    );
    expect(res.status).toBe(500);
    expect(res.body).not.toMatch(/ECONNREFUSED|10\.0\.0\.7|internal detail/);
    expect(JSON.parse(res.body)).toEqual({ error: 'the gateway failed to deliver this callback; try again' });
  });
});

describe('the listener', () => {
  const result = (threadId: string, id: string) => JSON.stringify({ type: 'tool_result', group_id: threadId, id });

  it('on loopback refuses a Host that is not loopback (DNS rebinding) with 421, and takes loopback Hosts', async () => {
    const { gateway, port, delivered } = await start();
    const path = (id: string) => pathOf(gateway.callbackUrl('t', id));
    expect(await send(port, path('a'), result('t', 'a'), { host: `evil.example:${port}` })).toEqual({
      status: 421,
      body: JSON.stringify({ error: 'this listener does not serve that Host' }),
    });
    expect((await send(port, path('b'), result('t', 'b'), { host: `127.0.0.1:${port}` })).status).toBe(200);
    expect((await send(port, path('c'), result('t', 'c'), { host: `localhost:${port}` })).status).toBe(200);
    expect(delivered.map((m) => m.id)).toEqual(['rap-tool-result-b', 'rap-tool-result-c']);
  });

  it('takes the Host of its public URL and of allowedHosts, so a proxy in front of a loopback gateway works', async () => {
    const { gateway, port } = await start({
      publicUrl: 'https://gateway.example.com/',
      allowedHosts: ['proxy.internal'],
    });
    const path = (id: string) => pathOf(gateway.callbackUrl('t', id));
    expect((await send(port, path('a'), result('t', 'a'), { host: 'gateway.example.com' })).status).toBe(200);
    expect((await send(port, path('b'), result('t', 'b'), { host: 'proxy.internal:8080' })).status).toBe(200);
    expect((await send(port, path('c'), result('t', 'c'), { host: 'evil.example' })).status).toBe(421);
  });

  it('answers 408 and closes a connection whose request does not arrive within requestTimeoutMs', async () => {
    const { gateway, port } = await start({ requestTimeoutMs: 300 });
    const conn = await rawConnection(port);
    // Headers and a body that never come to an end (slowloris).
    conn.socket.write(
      `POST ${pathOf(gateway.callbackUrl('t', 'c'))} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type"',
    );
    await eventually(() => conn.closed(), 20_000, 'the gateway to close the slow connection');
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes connections past maxConnections', async () => {
    const { gateway, port } = await start({ maxConnections: 2 });
    const held = [await rawConnection(port), await rawConnection(port)];
    // The server has taken both before the third arrives.
    const open = () => new Promise<number>((r) => gateway.app.server.getConnections((_e, n) => r(n)));
    await eventually(async () => (await open()) === 2, 20_000, 'two connections open');
    const third = await rawConnection(port);
    third.socket.write(`GET /rap/callback/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await eventually(() => third.closed() || third.received().length > 0, 20_000, 'an answer or a close');
    await eventually(() => third.closed(), 20_000, 'the third connection to be closed');
    expect(third.received()).toBe('');
    // The held ones are still served.
    held[0]!.socket.write(`GET /rap/callback/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await eventually(() => held[0]!.received().startsWith('HTTP/1.1 405'), 20_000, 'a 405 on a held connection');
  });
});

describe('view updates', () => {
  const view = (threadId: string, viewType: string, content: unknown) =>
    JSON.stringify({ type: 'view_update', group_id: threadId, view_type: viewType, content });

  it('are checked for shape like every other callback: 400, nothing kept, nothing announced', async () => {
    const { gateway, port, events } = await start();
    const path = pathOf(gateway.callbackUrl('t', 'c'));
    // Written as text: JSON.stringify of it would overflow this stack first.
    const deepJson = `{"type":"view_update","group_id":"t","view_type":"diff","content":${'{"d":'.repeat(5_000)}1${'}'.repeat(5_001)}`;
    const deep = await send(port, path, deepJson);
    expect(deep.status).toBe(400);
    expect(JSON.parse(deep.body)).toEqual({
      error: expect.stringMatching(
        /^Bad request: view\.d\.d\.d…\(\d+ more\)…d\.d is nested more than 128 levels deep$/,
      ),
    });
    const wide = await send(port, path, view('t', 'diff', { files: Array.from({ length: 20_000 }, () => 1) }));
    expect(wide.status).toBe(400);
    const named = await send(port, path, view('t', 'x'.repeat(300), {}));
    expect(named).toEqual({
      status: 400,
      body: JSON.stringify({ error: 'Bad request: view_type must be 1..256 characters' }),
    });
    expect(gateway.views('t')).toEqual({});
    expect(events).toEqual([]);
  });

  it('refuses one view over maxViewBytes with 413', async () => {
    const { gateway, port, events } = await start({ views: { maxViewBytes: 1000 } });
    const path = pathOf(gateway.callbackUrl('t', 'c'));
    const res = await send(port, path, view('t', 'log', 'x'.repeat(2000)));
    expect(res).toEqual({
      status: 413,
      body: JSON.stringify({ error: 'view content of 2002 bytes is over the limit of 1000 bytes' }),
    });
    expect((await send(port, path, view('t', 'log', 'x'.repeat(500)))).status).toBe(200);
    expect(gateway.views('t')).toEqual({ log: 'x'.repeat(500) });
    expect(events).toHaveLength(1);
  });

  it('keeps the latest view of each type, at most maxViewsPerThread per thread: the least recently updated goes', async () => {
    const { gateway, port } = await start({ views: { maxViewsPerThread: 3 } });
    const path = pathOf(gateway.callbackUrl('t', 'c'));
    for (const [type, n] of [
      ['a', 1],
      ['b', 1],
      ['c', 1],
      ['a', 2], // a is now the latest updated: b is the oldest
      ['d', 1],
    ] as const) {
      expect((await send(port, path, view('t', type, n))).status).toBe(200);
    }
    expect(gateway.views('t')).toEqual({ c: 1, a: 2, d: 1 });
  });

  it('keeps at most maxTotalViewBytes in all: the least recently updated views of any thread go first', async () => {
    // Each entry is charged 128 bytes, its thread id, its view type and its content: 1,135 bytes here, so 3 fit.
    const { gateway, port } = await start({ views: { maxTotalViewBytes: 4 * 1024 } });
    const content = 'y'.repeat(1000);
    for (const threadId of ['t1', 't2', 't3', 't4', 't5', 't6']) {
      const path = pathOf(gateway.callbackUrl(threadId, 'c'));
      expect((await send(port, path, view(threadId, 'log', content))).status).toBe(200);
    }
    for (const gone of ['t1', 't2', 't3']) expect(gateway.views(gone)).toEqual({});
    for (const kept of ['t4', 't5', 't6']) expect(gateway.views(kept)).toEqual({ log: content });
  });
});

describe('the body limit', () => {
  it('is the delivery limit by default: a body over it is not read, and its call is answered all the same', async () => {
    const { gateway, port, delivered } = await start();
    const text = 'z'.repeat(DEFAULT_MAX_STAGED_INPUT_BYTES + MiB);
    const res = await send(
      port,
      pathOf(gateway.callbackUrl('t', 'c')),
      JSON.stringify({ type: 'tool_result', group_id: 't', id: 'c', text }),
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({
      error: `callback body over ${DEFAULT_MAX_STAGED_INPUT_BYTES} bytes was not read; the call was answered with an error result that says so`,
    });
    expect(delivered).toHaveLength(1);
    expect(JSON.stringify(delivered[0]!.content)).toMatch(
      /is over the gateway's limit of 33554432 bytes, so it was not read/,
    );
  });

  it('is the configured one on every route: a non-POST is refused before its body is read', async () => {
    const { gateway, port } = await start({ bodyLimit: 4096 });
    const path = pathOf(gateway.callbackUrl('t', 'c'));
    // A PUT that announces a body and never sends it: the answer must not wait for it.
    const conn = await rawConnection(port);
    conn.socket.write(
      `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n`,
    );
    await eventually(() => conn.received().startsWith('HTTP/1.1 405'), 20_000, 'a 405 before the body');
    // A POST of 4 KiB + 1 byte is over it.
    const over = await send(
      port,
      path,
      JSON.stringify({ type: 'tool_result', group_id: 't', id: 'c', text: '' }).padEnd(4097, ' '),
    );
    expect(over.status).toBe(413);
  });
});

describe('display segments', () => {
  it('skips a segment of a known type in another shape and keeps the result (a real client refused the whole input)', async () => {
    const { gateway, port, delivered } = await start({
      // As the worker's own client does: an input that fails its checks is refused before it is signalled.
      deliver: async (m): Promise<DeliveryResult> => (delivered.push(checkInput(m)), { delivered: true }),
    });
    const url = gateway.callbackUrl('t', 'c');
    const res = await send(
      port,
      new URL(url).pathname,
      JSON.stringify({
        type: 'tool_result',
        group_id: 't',
        id: 'c',
        text: 'build 7: green',
        display_as: [
          { type: 'diff', content: 'not an object' },
          { type: 'text', content: 'shown' },
          { type: 'image', content: { data: 42 } },
        ],
      }),
    );
    expect(res.status).toBe(200);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.content).toEqual({
      type: 'tool_result',
      toolCallId: 'c',
      content: [{ type: 'text', text: 'build 7: green' }],
    });
    expect(delivered[0]!.displayAs).toEqual([{ type: 'text', content: 'shown' }]);
  });
});
