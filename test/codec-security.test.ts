/**
 * The codec endpoint and the encryption codec as an attacker meets them (security issue items 5, 9, 10): no endpoint
 * without a token or an `authorize` check, the Host check against DNS rebinding, a cap on payloads per request, CORS
 * for configured origins only and without credentials unless asked, the token as a path segment for the Temporal UI
 * (which can send no bearer token of its own), and key ids that are names of `Object.prototype`. Real HTTP on
 * loopback; no Temporal server needed.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  type CodecServer,
  type CodecServerOptions,
  loopbackOrigins,
  startCodecServer,
} from '../src/codec/codec-server';
import { EncryptionCodec } from '../src/codec/encryption-codec';
import { canCheckPeerUser } from '../src/codec/peer-user';
import type { DevServer } from '../src/devserver/server';
import { startLocalSystem } from '../src/local-system';
import { SimulatedModel } from '../src/model/simulated';

const TOKEN = 'codec-test-token-0123456789abcdef';
const codec = new EncryptionCodec({ current: 'k1', keys: { k1: randomBytes(32) } });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(options: Partial<CodecServerOptions> = { token: TOKEN }): Promise<CodecServer> {
  const server = await startCodecServer({ codec, ...options });
  cleanups.push(() => server.close());
  return server;
}

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

/** A POST with a raw `Host` header (fetch would not send one that differs from the URL). */
function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers },
      },
      (res) => {
        let out = '';
        res.on('data', (d: Buffer) => (out += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: out }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const auth = { authorization: `Bearer ${TOKEN}` };

describe('codec endpoint: who may use it', () => {
  it('will not start without a token or an authorize check', async () => {
    await expect(startCodecServer({ codec })).rejects.toThrow(/token|authorize/);
    await expect(startCodecServer({ codec, token: 'too-short', host: '0.0.0.0' })).rejects.toThrow(
      /codec endpoint on 0\.0\.0\.0 \(beyond loopback\) needs a token of at least 32 characters/,
    );
  });

  it('answers 421 to a Host that is not loopback (DNS rebinding)', async () => {
    const server = await serve();
    const sealed = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    const res = await post(
      `${server.url}/decode`,
      { payloads: sealed.map(toJson) },
      { ...auth, host: 'attacker.example' },
    );
    expect(res.status).toBe(421);
    expect(res.body).not.toContain('secret');
  });

  it('takes the token as the first path segment, for the Temporal UI, which sends no bearer token', async () => {
    const server = await serve();
    const sealed = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    const body = { payloads: sealed.map(toJson) };
    const ok = await post(`${server.url}/${TOKEN}/decode`, body);
    expect(ok.status).toBe(200);
    expect(
      Buffer.from((JSON.parse(ok.body) as { payloads: { data: string }[] }).payloads[0]!.data, 'base64').toString(),
    ).toBe('"secret"');
    expect(server.uiEndpoint).toBe(`${server.url}/${TOKEN}`);
    expect((await post(`${server.url}/wrong/decode`, body)).status).toBe(401);
    expect((await post(`${server.url}/decode`, body)).status).toBe(401);
  });
});

describe.skipIf(!canCheckPeerUser())('codec endpoint: sameUserBrowser (issue 38, finding 4)', () => {
  it('serves a browser of this user at an allowed origin without the token, and nobody else without it', async () => {
    const ui = 'http://127.0.0.1:8233';
    const sealed = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    const body = { payloads: sealed.map(toJson) };
    const server = await serve({ token: TOKEN, origins: [ui], sameUserBrowser: true });
    const ok = await post(`${server.url}/decode`, body, { origin: ui });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain(Buffer.from('"secret"').toString('base64'));
    expect((await post(`${server.url}/decode`, body)).status).toBe(401);
    expect((await post(`${server.url}/decode`, body, { origin: 'http://127.0.0.1:9999' })).status).toBe(401);
    // Off by default: an allowed origin alone is no credential.
    const plain = await serve({ token: TOKEN, origins: [ui] });
    expect((await post(`${plain.url}/decode`, body, { origin: ui })).status).toBe(401);
  });
});

describe('codec endpoint: what one request may cost', () => {
  it('refuses more payloads than maxPayloads in one request, before decoding any', async () => {
    const server = await serve({ token: TOKEN, maxPayloads: 100 });
    const tiny = { metadata: {}, data: '' };
    const many = await post(`${server.url}/decode`, { payloads: Array.from({ length: 101 }, () => tiny) }, auth);
    expect(many.status).toBe(413);
    expect(many.body).toMatch(/100 payloads/);
    expect(
      (await post(`${server.url}/decode`, { payloads: Array.from({ length: 100 }, () => tiny) }, auth)).status,
    ).toBe(200);
  });

  it('has a default cap far under 200,000 payloads', async () => {
    const server = await serve();
    const tiny = { data: '' };
    const res = await post(`${server.url}/encode`, { payloads: Array.from({ length: 200_000 }, () => tiny) }, auth);
    expect(res.status).toBe(413);
  });

  it('refuses payloads of the wrong shape with 400', async () => {
    const server = await serve();
    for (const payloads of [[1], [{ data: 5 }], [{ metadata: { encoding: 7 } }], [null]]) {
      const res = await post(`${server.url}/decode`, { payloads }, auth);
      expect(res.status, JSON.stringify(payloads)).toBe(400);
    }
  });
});

describe('codec endpoint: CORS', () => {
  it('lets configured origins read answers, without credentials unless asked', async () => {
    const server = await serve({ token: TOKEN, origins: ['http://127.0.0.1:8233'] });
    const ok = await post(`${server.url}/decode`, { payloads: [] }, { ...auth, origin: 'http://127.0.0.1:8233' });
    expect(ok.headers['access-control-allow-origin']).toBe('http://127.0.0.1:8233');
    expect(ok.headers['access-control-allow-credentials']).toBeUndefined();
    const other = await post(`${server.url}/decode`, { payloads: [] }, { ...auth, origin: 'http://127.0.0.1:9999' });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();

    const withCookies = await serve({ token: TOKEN, origins: loopbackOrigins, credentials: true });
    const res = await post(`${withCookies.url}/decode`, { payloads: [] }, { ...auth, origin: 'http://localhost:8233' });
    expect(res.headers['access-control-allow-credentials']).toBe('true');
  });
});

describe('EncryptionCodec: key ids named like Object.prototype members', () => {
  it('are unknown keys (a clear 400), not lookups on the prototype', async () => {
    const server = await serve();
    for (const id of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const [sealed] = await codec.encode([defaultPayloadConverter.toPayload('x')]);
      const forged = { ...sealed!, metadata: { ...sealed!.metadata, 'encryption-key-id': Buffer.from(id) } };
      await expect(codec.decode([forged])).rejects.toThrow(`unknown key '${id}'`);
      const res = await post(`${server.url}/decode`, { payloads: [toJson(forged)] }, auth);
      expect(res.status, id).toBe(400);
      expect(res.body, id).toContain(`unknown key '${id}'`);
    }
    expect(() => new EncryptionCodec({ current: 'constructor', keys: { k1: randomBytes(32) } })).toThrow(
      'not among the keys',
    );
    expect(() => new EncryptionCodec({ current: 'toString', keys: { k1: randomBytes(32) } })).toThrow(
      'not among the keys',
    );
  });
});

describe('startLocalSystem with codecEndpoint: {} (the README wiring) and eventsEndpoint: {}', () => {
  it('serves both endpoints with tokens of their own, never open', async () => {
    // The suite's dev server, as a running server: the system starts no server of its own.
    const devServer: DevServer = {
      address: inject('temporalAddress'),
      namespace: 'default',
      dbFilename: '',
      pid: 0,
      workflowUrl: () => undefined,
      stop: async () => {},
    };
    const sys = await startLocalSystem({
      devServer,
      model: new SimulatedModel(),
      dataDir: join(inject('scratchDir'), `codec-local-${randomBytes(4).toString('hex')}`),
      taskQueue: `codec-local-${randomBytes(4).toString('hex')}`,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      payloadCodec: codec,
      codecEndpoint: {},
      eventsEndpoint: {},
    });
    cleanups.push(() => sys.shutdown());
    const sealed = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    const body = { payloads: sealed.map(toJson) };
    expect((await post(`${sys.codecUrl}/decode`, body)).status).toBe(401);
    expect(sys.codecToken).toBeDefined();
    expect((await post(`${sys.codecUrl}/${sys.codecToken}/decode`, body)).status).toBe(200);
    expect((await post(`${sys.codecUrl}/decode`, body, { authorization: `Bearer ${sys.codecToken}` })).status).toBe(
      200,
    );

    expect(sys.eventsToken).toBeDefined();
    const stream = await fetch(`${sys.eventsUrl}/threads/t/events`);
    expect(stream.status).toBe(401);
  });
});
