/**
 * RAP conformance (rap-protocol.md §8), runtime client, gateway and tool-server SDK against hand-written peers over
 * real HTTP on loopback. Scenarios that need a thread (16–19, 23, 26, 27) are in runtime.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadNotFoundError } from '../../src/inbox/errors';
import type { InputMessage } from '../../src/core/types';
import { startRapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import { createRapToolServer } from '../../src/rap/tool-server';
import { loadRapToolsets, rapRefusedText } from '../../src/rap/toolsets';
import type { ToolContext } from '../../src/tools/tool';
import { eventually } from '../helpers';
import { manifestRoute, startPeer } from './fixture';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
async function peer(...args: Parameters<typeof startPeer>) {
  const p = await startPeer(...args);
  cleanups.push(p.close);
  return p;
}

const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} tool`,
  inputSchema: { type: 'object' },
  ...extra,
});
const gatewayStub = { callbackUrl: (t: string, c: string) => `http://127.0.0.1:9/cb/${t}/${c}` };
function ctx(over: Partial<ToolContext> = {}): ToolContext & { sent: InputMessage[] } {
  const sent: InputMessage[] = [];
  return {
    threadId: 'th-1',
    rootThreadId: 'th-1',
    ancestors: [],
    toolCallId: 'call-1',
    toolName: 'x',
    send: async (m) => void sent.push(m),
    sent,
    ...over,
  };
}

describe('runtime: discovery and invocation', () => {
  it('1 · fetches the manifest under the trimmed base with Accept: application/json, and invokes the endpoint verbatim', async () => {
    const p = await peer(
      manifestRoute((url) => ({ name: 'p', endpoint: `${url}/custom/invoke-here`, tools: [tool('ping')] })),
    );
    const ts = await loadRapToolsets({ servers: [{ url: `${p.url}/` }], gateway: gatewayStub });
    expect(ts.errors).toEqual([]);
    expect(p.requests[0]).toMatchObject({ method: 'GET', path: '/.well-known/rap-toolset' });
    expect(p.requests[0]!.headers.accept).toBe('application/json');
    await ts.tools[0]!.execute({}, ctx());
    expect(p.requests[1]).toMatchObject({ method: 'POST', path: '/custom/invoke-here' });
  });

  it('2 · rejects a whole toolset with no tools or a tool without inputSchema; others still load', async () => {
    const empty = await peer(manifestRoute((url) => ({ name: 'empty', endpoint: url, tools: [] })));
    const noSchema = await peer(
      manifestRoute((url) => ({
        name: 'bad',
        endpoint: url,
        tools: [tool('ok_one'), { name: 'broken', description: 'd' }],
      })),
    );
    const good = await peer(manifestRoute((url) => ({ name: 'good', endpoint: url, tools: [tool('fine')] })));
    const ts = await loadRapToolsets({
      servers: [{ url: empty.url }, { url: noSchema.url }, { url: good.url }],
      gateway: gatewayStub,
    });
    expect(ts.tools.map((t) => t.name)).toEqual(['fine']);
    expect(ts.errors.map((e) => e.error)).toEqual(['manifest has no tools', "tool 'broken' has no inputSchema object"]);
  });

  it('3 · exposes neither tool when two toolsets define the same name, and says so', async () => {
    const a = await peer(
      manifestRoute((url) => ({ name: 'a', endpoint: url, tools: [tool('get_time'), tool('only_a')] })),
    );
    const b = await peer(manifestRoute((url) => ({ name: 'b', endpoint: url, tools: [tool('get_time')] })));
    const ts = await loadRapToolsets({ servers: [{ url: a.url }, { url: b.url }], gateway: gatewayStub });
    expect(ts.tools.map((t) => t.name)).toEqual(['only_a']);
    expect(ts.errors).toEqual([
      { server: '*', error: "tool 'get_time' is defined by 2 toolsets; none of them is exposed" },
    ]);
  });

  it('5 · sends exactly the invocation fields, with ancestors for a child and null at the root', async () => {
    const p = await peer(manifestRoute((url) => ({ name: 'p', endpoint: `${url}/invoke`, tools: [tool('ping')] })));
    const ts = await loadRapToolsets({ servers: [{ url: p.url }], gateway: gatewayStub });
    await ts.tools[0]!.execute(
      { a: 1 },
      ctx({ threadId: 'child', ancestors: ['root', 'parent'], toolCallId: 'toolu_1' }),
    );
    await ts.tools[0]!.execute({}, ctx());
    await ts.tools[0]!.execute({}, ctx({ toolCallId: 'toolu_2', userId: 'alice' }));
    const [child, root, withUser] = p.requests.slice(1);
    expect(child!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(child!.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([
      'operation',
      'arguments',
      'id',
      'call_id',
      'callback_url',
      'group_id',
      'thread_ancestors',
    ]);
    expect(body).toEqual({
      operation: 'ping',
      arguments: { a: 1 },
      id: 'toolu_1',
      call_id: null,
      callback_url: 'http://127.0.0.1:9/cb/child/toolu_1',
      group_id: 'child',
      thread_ancestors: ['root', 'parent'],
    });
    expect((JSON.parse(root!.body) as { thread_ancestors: unknown }).thread_ancestors).toBeNull();
    // user_id only when known, before thread_ancestors (Infinity's order).
    expect(Object.keys(JSON.parse(withUser!.body) as object)).toEqual([
      'operation',
      'arguments',
      'id',
      'call_id',
      'callback_url',
      'group_id',
      'user_id',
      'thread_ancestors',
    ]);
    expect((JSON.parse(withUser!.body) as { user_id: string }).user_id).toBe('alice');
  });

  it('7 · retries a 503 with backoff, then records the error result; a 4xx is not retried', async () => {
    let status = 503;
    const p = await peer(
      manifestRoute(
        (url) => ({ name: 'p', endpoint: `${url}/invoke`, tools: [tool('flaky')] }),
        (_r, res) => res.writeHead(status).end(),
      ),
    );
    const ts = await loadRapToolsets({ servers: [{ url: p.url }], gateway: gatewayStub, attempts: 3, backoffMs: 10 });
    const c = ctx();
    await ts.tools[0]!.execute({}, c);
    expect(p.requests.filter((r) => r.method === 'POST')).toHaveLength(3);
    expect(c.sent.map((m) => m.content)).toEqual([
      {
        type: 'tool_result',
        toolCallId: 'call-1',
        content: [{ type: 'text', text: rapRefusedText('flaky', `${p.url}/invoke`, 503) }],
      },
    ]);
    status = 404;
    const c2 = ctx({ toolCallId: 'call-2' });
    await ts.tools[0]!.execute({}, c2);
    expect(p.requests.filter((r) => r.method === 'POST')).toHaveLength(4);
    expect(JSON.stringify(c2.sent[0]!.content)).toContain('responded with HTTP 404');
  });

  it('22/25 · sends cancel and close notices to every configured server, tolerating failures', async () => {
    const a = await peer(manifestRoute((url) => ({ name: 'a', endpoint: url, tools: [tool('ta')] })));
    const b = await peer((r, res) =>
      r.method === 'GET'
        ? manifestRoute((url) => ({ name: 'b', endpoint: url, tools: [tool('tb')] }))(r, res, b.url)
        : res.writeHead(500).end(),
    );
    const ts = await loadRapToolsets({
      servers: [{ url: a.url }, { url: b.url }, { url: 'http://127.0.0.1:9' }],
      gateway: gatewayStub,
    });
    await ts.callCancelled!('th-1', 'call-9');
    await ts.threadClosed!('th-1');
    for (const p of [a, b]) {
      const posts = p.requests.filter((r) => r.method === 'POST');
      expect(posts.map((r) => [r.path, JSON.parse(r.body)])).toEqual([
        ['/cancel_tool_call', { thread_id: 'th-1', tool_call_id: 'call-9' }],
        ['/close_thread', { thread_id: 'th-1' }],
      ]);
    }
  });
});

describe('gateway', () => {
  async function gateway(
    deliver: (m: InputMessage) => Promise<{ delivered: true }> = async () => ({ delivered: true }),
  ) {
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
    const delivered: InputMessage[] = [];
    const g = await startRapGateway({ tokens, deliver: async (m) => (delivered.push(m), deliver(m)) });
    cleanups.push(g.close);
    const post = (url: string, body: unknown, contentType = 'application/json') =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    return { g, delivered, post, tokens };
  }

  it('10/11 · prefers non-empty content over text, falls back to text, and drops unknown display segments', async () => {
    const { g, delivered, post } = await gateway();
    const img = { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' };
    await post(g.callbackUrl('th', 'a'), {
      type: 'tool_result',
      group_id: 'th',
      id: 'a',
      text: 'summary',
      content: [{ type: 'text', text: 'see image' }, img],
    });
    await post(g.callbackUrl('th', 'b'), {
      type: 'tool_result',
      group_id: 'th',
      id: 'b',
      text: 'plain',
      content: [],
      display_as: [
        { type: 'chart', content: {} },
        { type: 'text', content: 's' },
      ],
    });
    expect(delivered[0]!.content).toEqual({
      type: 'tool_result',
      toolCallId: 'a',
      content: [{ type: 'text', text: 'see image' }, img],
    });
    expect(delivered[1]!.content).toEqual({
      type: 'tool_result',
      toolCallId: 'b',
      content: [{ type: 'text', text: 'plain' }],
    });
    // No copy of the raw text as a last segment: the result's own content is every UI's fallback.
    expect(delivered[1]!.displayAs).toEqual([{ type: 'text', content: 's' }]);
    expect(delivered.map((m) => m.id)).toEqual(['rap-tool-result-a', 'rap-tool-result-b']);
  });

  it('12/13/14 · refuses mismatched, duplicate, malformed and non-POST callbacks; unknown threads are 404', async () => {
    const { g, delivered, post } = await gateway(async (m) => {
      if (m.threadId === 'ghost') throw new ThreadNotFoundError('ghost');
      return { delivered: true };
    });
    const url = g.callbackUrl('th', 'c1');
    expect((await post(url, { type: 'tool_result', group_id: 'th', id: 'c2', text: 'x' })).status).toBe(403);
    expect((await post(url, { type: 'tool_result', group_id: 'other', id: 'c1', text: 'x' })).status).toBe(403);
    expect((await post(url, '{"type": "tool_result", ')).status).toBe(400);
    expect((await post(url, { type: 'tool_resultt', group_id: 'th', id: 'c1' })).status).toBe(400);
    expect((await post(url, 'type=tool_result', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await fetch(url)).status).toBe(405);
    expect((await post(url, { type: 'tool_result', group_id: 'th', id: 'c1', text: 'once' })).status).toBe(200);
    expect((await post(url, { type: 'tool_result', group_id: 'th', id: 'c1', text: 'once' })).status).toBe(409);
    expect(
      (await post(g.callbackUrl('ghost', 'c'), { type: 'tool_result', group_id: 'ghost', id: 'c', text: 'x' })).status,
    ).toBe(404);
    expect(delivered.filter((m) => m.threadId === 'th')).toHaveLength(1);
  });

  it('28 · keeps the last view of each type, announces each, and never queues one', async () => {
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
    const seen: unknown[] = [];
    const delivered: InputMessage[] = [];
    const g = await startRapGateway({
      tokens,
      deliver: async (m) => (delivered.push(m), { delivered: true }),
      onEvent: (e) => seen.push(e),
    });
    cleanups.push(g.close);
    const url = g.callbackUrl('th', 'c');
    for (const files of [['a.ts'], ['a.ts', 'b.ts']]) {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'view_update', group_id: 'th', view_type: 'diff', content: { files } }),
      });
      expect(r.status).toBe(200);
    }
    expect(g.views('th')).toEqual({ diff: { files: ['a.ts', 'b.ts'] } });
    expect(seen).toHaveLength(2);
    expect(delivered).toEqual([]);
  });

  it('rotates keys: tokens of the old key still verify, new ones use the new key, removed keys stop working', () => {
    const k1 = newCallbackKey();
    const k2 = newCallbackKey();
    const before = new CallbackTokens({ current: 'k1', keys: { k1 } });
    const old = before.mint({ threadId: 't', callId: 'c', expiresAt: Date.now() + 60_000 });
    const during = new CallbackTokens({ current: 'k2', keys: { k1, k2 } });
    expect(during.verify(old)).toMatchObject({ ok: true, claims: { threadId: 't', callId: 'c' } });
    expect(during.mint({ threadId: 't', callId: 'c', expiresAt: Date.now() + 60_000 }).startsWith('k2.')).toBe(true);
    expect(new CallbackTokens({ current: 'k2', keys: { k2 } }).verify(old)).toEqual({
      ok: false,
      reason: 'unknown_key',
    });
    expect(during.verify(before.mint({ threadId: 't', callId: 'c', expiresAt: Date.now() - 1 }))).toEqual({
      ok: false,
      reason: 'expired',
    });
  });

  it('accepts only the canonical spelling of a signature (base64url leaves bits of the last character unused)', () => {
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
    const token = tokens.mint({ threadId: 't', callId: 'c', expiresAt: Date.now() + 60_000 });
    expect(tokens.verify(token).ok).toBe(true);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = token.at(-1)!;
    // A 32-byte HMAC is 43 characters; the last one holds 4 bits, so these 3 siblings decode to the same bytes.
    const siblings = [1, 2, 3].map(
      (d) => alphabet[(alphabet.indexOf(last) & ~3) | ((alphabet.indexOf(last) + d) & 3)]!,
    );
    for (const s of siblings) {
      const variant = token.slice(0, -1) + s;
      expect(Buffer.from(variant.split('.')[2]!, 'base64url')).toEqual(Buffer.from(token.split('.')[2]!, 'base64url'));
      expect(tokens.verify(variant)).toEqual({ ok: false, reason: 'bad_signature' });
    }
  });
});

describe('tool-server SDK', () => {
  async function sdk(
    handler: Parameters<typeof createRapToolServer>[0]['tools'][number]['handler'],
    onCloseThread?: (id: string) => void,
  ) {
    const callbacks: Record<string, unknown>[] = [];
    const sink = await peer((r, res) => {
      callbacks.push(JSON.parse(r.body) as Record<string, unknown>);
      res.end('OK');
    });
    const server = await createRapToolServer({
      name: 'sdk',
      tools: [
        {
          name: 'work',
          description: 'does work',
          inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
          handler,
        },
      ],
      ...(onCloseThread && { onCloseThread }),
    });
    cleanups.push(server.close);
    /** What the runtime sends with every request: the server's token (made at start). */
    const auth = { authorization: `Bearer ${server.token!}` };
    const invoke = (body: Record<string, unknown>) =>
      fetch(`${server.url}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({
          operation: 'work',
          arguments: {},
          id: 'call-1',
          call_id: 'prov-1',
          callback_url: sink.url,
          group_id: 'th-1',
          ...body,
        }),
      });
    return { server, sink, callbacks, invoke, auth };
  }

  it('6/9 · acknowledges before the work finishes, then posts the result echoing group_id, id and call_id', async () => {
    let release!: () => void;
    const { callbacks, invoke } = await sdk(async () => {
      await new Promise<void>((r) => (release = r));
      return 'done';
    });
    const ack = await invoke({});
    expect(ack.status).toBe(200);
    expect(await ack.text()).toBe('OK');
    expect(callbacks).toEqual([]);
    release();
    await eventually(() => callbacks[0]);
    expect(callbacks).toEqual([
      { type: 'tool_result', group_id: 'th-1', id: 'call-1', call_id: 'prov-1', text: 'done' },
    ]);
  });

  it('8 · acks an unknown operation and answers it with an error result; invalid arguments likewise', async () => {
    const { callbacks, invoke } = await sdk(() => 'never');
    expect((await invoke({ operation: 'nope' })).status).toBe(200);
    expect((await invoke({ id: 'call-2', arguments: { n: 'three' } })).status).toBe(200);
    await eventually(() => callbacks.length === 2 || undefined);
    const byId = Object.fromEntries(callbacks.map((c) => [c.id, c]));
    expect(byId['call-1']).toEqual({
      type: 'tool_result',
      group_id: 'th-1',
      id: 'call-1',
      call_id: 'prov-1',
      text: 'Error: unknown operation: nope',
    });
    expect(String(byId['call-2']!.text)).toMatch(/^Error: invalid arguments: data\/n must be number/);
  });

  it('11 · never emits a display segment Infinity cannot parse', async () => {
    const { callbacks, invoke } = await sdk(async (_a, ctx) => {
      await ctx.result({ text: 't', displayAs: [{ type: 'markdown', content: '# no' } as never] });
    });
    await invoke({});
    await eventually(() => callbacks[0]);
    expect(callbacks[0]).toMatchObject({
      type: 'tool_result',
      text: "Error: display segment type 'markdown' is not text, diff or image",
    });
    expect(callbacks[0]).not.toHaveProperty('display_as');
  });

  it('24/25 · answers cancel and close with 200 and an empty body, aborts the call, and guards thread ids', async () => {
    const closedIds: string[] = [];
    let aborted = false;
    const { server, invoke, auth } = await sdk(
      async (_a, ctx) => {
        await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => ((aborted = true), r())));
      },
      (id) => void closedIds.push(id),
    );
    await invoke({});
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify(body),
      });
    for (let i = 0; i < 2; i++) {
      const r = await post('/cancel_tool_call', { thread_id: 'th-1', tool_call_id: 'unknown' });
      expect([r.status, await r.text()]).toEqual([200, '']);
    }
    expect(aborted).toBe(false);
    await post('/cancel_tool_call', { thread_id: 'th-1', tool_call_id: 'call-1' });
    await eventually(() => aborted || undefined);
    for (const id of ['th-1', '../../etc', 'a/b', 'unknown-thread'])
      expect((await post('/close_thread', { thread_id: id })).status).toBe(200);
    expect(closedIds).toEqual(['th-1', 'unknown-thread']);
  });

  it('answers cancel and close with 200 whatever the content type, and reads JSON however it is labelled', async () => {
    const closedIds: string[] = [];
    const { server, auth } = await sdk(
      () => 'x',
      (id) => void closedIds.push(id),
    );
    const post = (path: string, body: string, type?: string) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { ...auth, ...(type && { 'content-type': type }) },
        body,
      });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream', undefined]) {
      for (const path of ['/cancel_tool_call', '/close_thread']) {
        const r = await post(
          path,
          JSON.stringify({ thread_id: `th-${(type ?? 'none').replace('/', '_')}`, tool_call_id: 'c' }),
          type,
        );
        expect({ path, type, status: r.status, body: await r.text() }).toEqual({ path, type, status: 200, body: '' });
      }
      expect((await post('/close_thread', 'not json at all', type)).status).toBe(200);
    }
    expect(closedIds).toEqual([
      'th-text_plain',
      'th-application_x-www-form-urlencoded',
      'th-application_octet-stream',
      'th-none',
    ]);
  });

  it("names its endpoint by its configuration (the listen address), never by a request's Host header", async () => {
    const { server, auth } = await sdk(() => 'x');
    const port = new URL(server.url).port;
    const manifest = async (host: string) => {
      // fetch sets Host itself; node:http lets the test name it.
      const { request } = await import('node:http');
      return new Promise<{ status: number; endpoint?: string }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/.well-known/rap-toolset',
            headers: { host, accept: 'application/json', ...auth },
          },
          (res) => {
            let data = '';
            res.on('data', (d: Buffer) => (data += d.toString()));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, ...(JSON.parse(data) as { endpoint?: string }) }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });
    };
    expect((await manifest(`127.0.0.1:${port}`)).endpoint).toBe(`http://127.0.0.1:${port}/invoke`);
    expect((await manifest(`localhost:${port}`)).endpoint).toBe(`http://127.0.0.1:${port}/invoke`);
    // A foreign Host on a loopback bind is DNS rebinding: refused by the listeners' guard.
    const rebound = await manifest('tools.example.com');
    expect([rebound.status, rebound.endpoint]).toEqual([421, undefined]);
  });

  it('refuses to send what a runtime could not read: an empty result, a view without content, a choice without choices', async () => {
    const seen: string[] = [];
    const attempt = async (fn: () => Promise<unknown>) => {
      try {
        await fn();
        seen.push('sent');
      } catch (e) {
        seen.push((e as Error).message);
      }
    };
    const { callbacks, invoke } = await sdk(async (_a, ctx) => {
      await attempt(() => ctx.view('board', undefined));
      await attempt(() => ctx.choose('which?', []));
      await attempt(() => ctx.choose('which?', ['a', 'b'], 2));
      await attempt(() => ctx.result({ displayAs: [{ type: 'text', content: 'only a display' }] }));
      return 'fine';
    });
    await invoke({});
    await eventually(() => callbacks[0]);
    expect(seen).toEqual([
      "view 'board' needs content",
      'choose needs at least one choice',
      'choose: the default 2 is not one of 0..1',
      'a result needs text or content',
    ]);
    // Nothing invalid went out; the handler's own result did.
    expect(callbacks).toEqual([
      { type: 'tool_result', group_id: 'th-1', id: 'call-1', call_id: 'prov-1', text: 'fine' },
    ]);
  });
});
