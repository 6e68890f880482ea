/**
 * Who may use a tool server made with the SDK, and where it sends its callbacks: a token (or `authorize`) on the RAP
 * routes, callback URLs only on allowed origins (loopback by default) and never through a redirect, a manifest that
 * names the configured URL whatever the `Host`, choices answered only with their key, no browser requests, no open
 * bind beyond loopback. Then the runtime's side: a thread calls a tool server that wants a token, end to end on the dev
 * server. Real servers and peers on loopback throughout.
 */
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import {
  createRapToolServer,
  type RapToolHandler,
  type RapToolServer,
  type RapToolServerOptions,
} from '../../src/rap/tool-server';
import { loadRapToolsets, type RapToolsets } from '../../src/rap/toolsets';
import { eventually, render, startTestSystem, uid, type TestSystem } from '../helpers';
import { manifestRoute, obedientModel, type RecordedRequest, startPeer } from './fixture';

const TOKEN = 'tool-server-token-0123456789';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Peer = Awaited<ReturnType<typeof startPeer>>;

/** A callback sink: records every callback, answers 200. */
async function sink(): Promise<Peer> {
  const p = await startPeer((_r, res) => res.end('OK'));
  cleanups.push(p.close);
  return p;
}

async function server(options: Partial<RapToolServerOptions>, handler: RapToolHandler['handler'] = () => 'done') {
  const s = await createRapToolServer({
    name: 'secured',
    tools: [{ name: 'work', description: 'does work', inputSchema: { type: 'object' }, handler }],
    callbackBackoffMs: 10,
    ...options,
  });
  cleanups.push(s.close);
  return s;
}

const invocation = (callbackUrl: string, id = 'call-1') => ({
  operation: 'work',
  arguments: {},
  id,
  call_id: null,
  callback_url: callbackUrl,
  group_id: 'th-1',
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A GET with a `Host` of the test's choosing (fetch sets its own). */
function getWithHost(
  url: string,
  path: string,
  host: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers: { ...headers, host } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const bodies = (p: Peer) => p.requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);

describe('tool-server SDK: inbound authorization', () => {
  it('serves the RAP routes only with its bearer token', async () => {
    const cb = await sink();
    const closed: string[] = [];
    let aborted = false;
    const s = await server(
      { token: TOKEN, onCloseThread: (id) => void closed.push(id) },
      (_a, ctx) =>
        new Promise<string>((resolve) =>
          ctx.signal.addEventListener('abort', () => ((aborted = true), resolve('stopped'))),
        ),
    );
    expect((await fetch(`${s.url}/.well-known/rap-toolset`)).status).toBe(401);
    const unauthenticated = await post(`${s.url}/invoke`, invocation(cb.url));
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(`${s.url}/invoke`, invocation(cb.url), bearer(`${TOKEN}x`))).status).toBe(401);
    expect((await post(`${s.url}/invoke`, invocation(cb.url), { authorization: TOKEN })).status).toBe(401);

    const manifest = await fetch(`${s.url}/.well-known/rap-toolset`, { headers: bearer(TOKEN) });
    expect(manifest.status).toBe(200);
    expect((await post(`${s.url}/invoke`, invocation(cb.url), bearer(TOKEN))).status).toBe(200);
    // Cancel and close without the token change nothing.
    expect((await post(`${s.url}/cancel_tool_call`, { thread_id: 'th-1', tool_call_id: 'call-1' })).status).toBe(401);
    expect((await post(`${s.url}/close_thread`, { thread_id: 'th-1' })).status).toBe(401);
    expect([aborted, closed]).toEqual([false, []]);
    expect(cb.requests).toEqual([]);
    // With it, they do.
    await post(`${s.url}/close_thread`, { thread_id: 'th-1' }, bearer(TOKEN));
    await eventually(() => cb.requests[0]);
    expect([aborted, closed, bodies(cb)]).toEqual([
      true,
      ['th-1'],
      [{ type: 'tool_result', group_id: 'th-1', id: 'call-1', call_id: null, text: 'stopped' }],
    ]);
  });

  it('asks authorize about every RAP request, after the token', async () => {
    const cb = await sink();
    const s = await server({ token: TOKEN, authorize: (req) => req.headers['x-runtime'] === 'trusted' });
    expect((await post(`${s.url}/invoke`, invocation(cb.url), bearer(TOKEN))).status).toBe(403);
    expect((await post(`${s.url}/invoke`, invocation(cb.url), { 'x-runtime': 'trusted' })).status).toBe(401);
    expect(
      (await post(`${s.url}/invoke`, invocation(cb.url), { ...bearer(TOKEN), 'x-runtime': 'trusted' })).status,
    ).toBe(200);
    await eventually(() => cb.requests[0]);
    expect(cb.requests).toHaveLength(1);
  });

  it('wants a random token of its own by default, even on loopback: no local process may invoke it and have its callbackHeaders posted to a URL of its choosing (issue 38, finding 5)', async () => {
    const attacker = await sink();
    const s = await server({ callbackHeaders: { authorization: 'Bearer gateway-credential' } });
    expect(s.token).toMatch(/^[\w-]{43}$/);
    expect((await server({})).token).not.toBe(s.token);
    expect((await fetch(`${s.url}/.well-known/rap-toolset`)).status).toBe(401);
    const r = await post(`${s.url}/invoke`, invocation(`${attacker.url}/cb`));
    expect(r.status).toBe(401);
    for (const path of ['/cancel_tool_call', '/close_thread'])
      expect((await post(`${s.url}${path}`, { thread_id: 'th-1', tool_call_id: 'call-1' })).status).toBe(401);
    // The runtime, with the token the server made (`RapServerConfig.token: server.token`), is served as before.
    expect((await fetch(`${s.url}/.well-known/rap-toolset`, { headers: bearer(s.token!) })).status).toBe(200);
    const gateway = await sink();
    expect((await post(`${s.url}/invoke`, invocation(`${gateway.url}/cb`), bearer(s.token!))).status).toBe(200);
    await eventually(() => gateway.requests[0]);
    expect(gateway.requests[0]!.headers.authorization).toBe('Bearer gateway-credential');
    expect(attacker.requests).toEqual([]);
  });

  it('makes no token when authorize is given alone (it decides), and none with token: false, on loopback only', async () => {
    const cb = await sink();
    const checked = await server({ authorize: (req) => req.headers['x-runtime'] === 'trusted' });
    expect(checked.token).toBeUndefined();
    expect((await post(`${checked.url}/invoke`, invocation(cb.url))).status).toBe(403);
    expect((await post(`${checked.url}/invoke`, invocation(cb.url), { 'x-runtime': 'trusted' })).status).toBe(200);

    const open = await server({ token: false });
    expect(open.token).toBeUndefined();
    expect((await post(`${open.url}/invoke`, invocation(cb.url, 'call-2'))).status).toBe(200);
    await eventually(() => (cb.requests.length === 2 ? true : undefined));
    await expect(server({ host: '0.0.0.0', publicUrl: 'https://tools.example.com', token: false })).rejects.toThrow(
      /needs a token or an authorize function/,
    );
  });

  it("refuses a browser's request (an Origin header), which a page could send to a loopback server", async () => {
    const cb = await sink();
    const s = await server({});
    const r = await post(`${s.url}/invoke`, invocation(cb.url), {
      origin: 'https://evil.example',
      ...bearer(s.token!),
    });
    expect(r.status).toBe(403);
    expect((await post(`${s.url}/invoke`, invocation(cb.url), bearer(s.token!))).status).toBe(200);
    await eventually(() => cb.requests[0]);
    expect(cb.requests).toHaveLength(1);
  });

  it('refuses to start open beyond loopback, or on all interfaces without a public URL', async () => {
    await expect(server({ host: '0.0.0.0', publicUrl: 'https://tools.example.com' })).rejects.toThrow(
      /needs a token or an authorize function/,
    );
    await expect(server({ host: '0.0.0.0', token: TOKEN })).rejects.toThrow(/needs publicUrl/);
    await expect(server({ token: 'short' })).rejects.toThrow(/at least 16 characters/);
    const s = await server({ host: '0.0.0.0', token: TOKEN, publicUrl: 'https://tools.example.com' });
    const port = new URL(s.url).port;
    expect((await fetch(`http://127.0.0.1:${port}/.well-known/rap-toolset`)).status).toBe(401);
  });
});

describe('tool-server SDK: where callbacks go', () => {
  it('posts callbacks to loopback only by default, and refuses any other callback URL before sending anything', async () => {
    const cb = await sink();
    const s = await server({});
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'https://gateway.example.com/rap/callback/t',
      `http://user:pw@127.0.0.1:${new URL(cb.url).port}/cb`,
      'file:///etc/passwd',
    ]) {
      const r = await post(`${s.url}/invoke`, invocation(url), bearer(s.token!));
      expect({ url, status: r.status }).toEqual({ url, status: 403 });
    }
    expect((await post(`${s.url}/invoke`, invocation(`${cb.url}/cb`), bearer(s.token!))).status).toBe(200);
    await eventually(() => cb.requests[0]);
    expect(cb.requests).toHaveLength(1);
  });

  it('sends callbackHeaders only to the origins in callbackOrigins', async () => {
    const gateway = await sink();
    const elsewhere = await sink();
    const s = await server({
      callbackOrigins: [`${gateway.url}/ignored/path`],
      callbackHeaders: { authorization: 'Bearer gateway-credential' },
    });
    const refused = await post(`${s.url}/invoke`, invocation(`${elsewhere.url}/cb`), bearer(s.token!));
    expect([refused.status, await refused.text()]).toEqual([
      403,
      `callback_url origin ${elsewhere.url} is not allowed by this tool server (its callbackOrigins option)`,
    ]);
    expect((await post(`${s.url}/invoke`, invocation(`${gateway.url}/cb`, 'call-2'), bearer(s.token!))).status).toBe(
      200,
    );
    await eventually(() => gateway.requests[0]);
    expect(gateway.requests[0]!.headers.authorization).toBe('Bearer gateway-credential');
    expect(elsewhere.requests).toEqual([]);
  });

  it('does not follow a redirect from the callback URL (with its credentials) to another origin', async () => {
    const elsewhere = await sink();
    const redirecting = await startPeer((_r, res) => res.writeHead(307, { location: `${elsewhere.url}/stolen` }).end());
    cleanups.push(redirecting.close);
    const failures: string[] = [];
    const s = await server(
      { callbackAttempts: 2, callbackHeaders: { authorization: 'Bearer gateway-credential' } },
      async (_a, ctx) => {
        await ctx.result('done').catch((e: Error) => void failures.push(e.message));
      },
    );
    expect((await post(`${s.url}/invoke`, invocation(`${redirecting.url}/cb`), bearer(s.token!))).status).toBe(200);
    await eventually(() => failures[0]);
    expect(failures).toEqual(['callback failed after 2 attempts']);
    expect(redirecting.requests).toHaveLength(2);
    expect(elsewhere.requests).toEqual([]);
  });
});

describe('tool-server SDK: the URLs it names', () => {
  it("names its endpoint from configuration and serves no foreign Host, whatever a request's Host says", async () => {
    const plain = await server({});
    const port = new URL(plain.url).port;
    const get = (s: RapToolServer, host: string) =>
      getWithHost(s.url, '/.well-known/rap-toolset', host, bearer(s.token!));
    const own = await get(plain, `127.0.0.1:${port}`);
    expect(JSON.parse(own.body)).toMatchObject({ endpoint: `${plain.url}/invoke` });
    const byLocalhost = await get(plain, `localhost:${port}`);
    expect(JSON.parse(byLocalhost.body)).toMatchObject({ endpoint: `${plain.url}/invoke` });
    expect((await get(plain, 'tools.example.com')).status).toBe(421);

    const proxied = await server({ publicUrl: 'https://tools.example.com/rap/' });
    const viaProxy = await get(proxied, 'tools.example.com');
    expect(viaProxy.status).toBe(200);
    expect(JSON.parse(viaProxy.body)).toMatchObject({ endpoint: 'https://tools.example.com/rap/invoke' });
    expect((await get(proxied, 'evil.example')).status).toBe(421);
  });

  it('sets the listener limits it is given (the common guard)', async () => {
    const s = await server({ limits: { requestTimeoutMs: 7_000, keepAliveTimeoutMs: 1_000, maxConnections: 3 } });
    expect([s.app.server.requestTimeout, s.app.server.keepAliveTimeout, s.app.server.maxConnections]).toEqual([
      7_000, 1_000, 3,
    ]);
  });

  it("takes a choice's answer only with the key in its response_url", async () => {
    const cb = await sink();
    const s = await server({ token: TOKEN }, async (_a, ctx) => {
      const i = await ctx.choose('Deploy?', ['yes', 'no'], 1);
      return `chose ${i}`;
    });
    await post(`${s.url}/invoke`, invocation(cb.url), bearer(TOKEN));
    const choice = await eventually(() => bodies(cb).find((b) => b.type === 'user_choice'));
    const responseUrl = new URL(String(choice.response_url));
    expect(`${responseUrl.origin}${responseUrl.pathname}`).toBe(`${s.url}/user_choice_response`);
    expect(responseUrl.searchParams.get('key')).toMatch(/^[\w-]{43}$/);
    const answer = { id: 'call-1', selected: 0 };
    // The token is no key: the user's client answers, and the key is what only the thread's status shows it.
    for (const url of [`${s.url}/user_choice_response`, `${s.url}/user_choice_response?key=guess`])
      expect((await post(url, answer, bearer(TOKEN))).status).toBe(403);
    expect(bodies(cb).filter((b) => b.type === 'tool_result')).toEqual([]);
    expect((await post(responseUrl.href, answer)).status).toBe(200);
    await eventually(() => bodies(cb).find((b) => b.type === 'tool_result'));
    expect(bodies(cb).at(-1)).toMatchObject({ type: 'tool_result', text: 'chose 0' });
    // Answered: a second answer finds no open choice.
    expect((await post(responseUrl.href, { id: 'call-1', selected: 1 })).status).toBe(200);
  });
});

describe("the runtime's side: toolsets that send a server's token", () => {
  it("refuses a manifest whose endpoint is on another origin rather than send it the server's token", async () => {
    const elsewhere = await sink();
    const p = await startPeer(
      manifestRoute(() => ({
        name: 'moved',
        endpoint: `${elsewhere.url}/invoke`,
        tools: [{ name: 'ping', description: 'p', inputSchema: { type: 'object' } }],
      })),
    );
    cleanups.push(p.close);
    const toolsets = await loadRapToolsets({
      servers: [{ url: p.url, token: TOKEN }],
      gateway: { callbackUrl: () => 'http://127.0.0.1:9/cb' },
    });
    expect(toolsets.tools).toEqual([]);
    expect(toolsets.errors).toEqual([
      {
        server: p.url,
        error: `the manifest's endpoint ${elsewhere.url}/invoke is not on ${p.url}: this server's credentials are not sent there`,
      },
    ]);
    expect(p.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(elsewhere.requests).toEqual([]);
  });
});

describe('a thread calls a tool server that wants a token (dev server)', () => {
  let sys: TestSystem;
  let gateway: RapGateway;
  let toolServer: RapToolServer;
  let toolsets: RapToolsets;
  const seen: RecordedRequest['headers'][] = [];
  const cancelled: string[] = [];
  let release: ((s: string) => void) | undefined;

  beforeAll(async () => {
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
    const ref: { sys?: TestSystem } = {};
    gateway = await startRapGateway({ tokens, deliver: (m) => ref.sys!.client.deliver(m) });
    toolServer = await createRapToolServer({
      name: 'secured-tools',
      token: TOKEN,
      authorize: (req) => (seen.push(req.headers), true),
      callbackOrigins: [gateway.url],
      tools: [
        {
          name: 'deploy',
          description: 'Deploys after the user confirms.',
          inputSchema: { type: 'object', properties: {} },
          handler: async (_a, ctx) => `deployed: ${['yes', 'no'][await ctx.choose('Deploy?', ['yes', 'no'], 1)]}`,
        },
        {
          name: 'run_build',
          description: 'Runs a build until it is cancelled.',
          inputSchema: { type: 'object', properties: {} },
          handler: (_a, ctx) =>
            new Promise<string>((resolve) => {
              release = resolve;
              ctx.signal.addEventListener('abort', () => (cancelled.push(ctx.toolCallId), resolve('aborted')));
            }),
        },
      ],
    });
    toolsets = await loadRapToolsets({ servers: [{ url: toolServer.url, token: TOKEN }], gateway, backoffMs: 20 });
    sys = ref.sys = await startTestSystem({ model: obedientModel(), tools: toolsets.tools, toolLifecycle: [toolsets] });
  }, 60_000);

  afterAll(async () => {
    await sys?.shutdown();
    await toolServer?.close();
    await gateway?.close();
  });

  it('loads the manifest, invokes, takes the answer to a choice and the result, all with the token', async () => {
    expect(toolsets.errors).toEqual([]);
    expect(toolsets.tools.map((t) => t.name)).toEqual(['deploy', 'run_build']);
    const thread = await sys.client.startThread({ threadId: uid('rap-token') });
    await thread.sendUserText('call deploy {}');
    const prompt = await eventually(async () => (await thread.status()).prompts[0]);
    expect(await thread.answerChoice((prompt as { id: string }).id, 0)).toBe(0);
    await thread.waitForIdle({ settled: true });
    expect(render(await thread.history()).slice(-2)).toEqual([
      'result #1: deployed: yes',
      'assistant: got: deployed: yes',
    ]);
    expect(seen.length).toBeGreaterThanOrEqual(2); // the manifest and the invocation
    for (const h of seen) expect(h.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('sends the cancellation of an interrupted call with the token, so the tool stops', async () => {
    const thread = await sys.client.startThread({ threadId: uid('rap-token-int') });
    await thread.sendUserText('call run_build {}');
    await thread.waitForIdle();
    const callId = (await thread.status()).pendingCall!.id;
    await thread.sendUserText('never mind');
    await eventually(() => cancelled.includes(callId) || undefined);
    await thread.waitForIdle({ settled: true });
    expect(render(await thread.history())).toContain('result #1: Tool call interrupted by user');
    void release;
  });

  it('without the token, the server is not loaded at all', async () => {
    const refused = await loadRapToolsets({ servers: [{ url: toolServer.url }], gateway });
    expect(refused.tools).toEqual([]);
    expect(refused.errors).toEqual([
      { server: toolServer.url, error: `GET ${toolServer.url}/.well-known/rap-toolset answered HTTP 401` },
    ]);
  });
});
