/**
 * The standalone gateway (`infinity-temporal gateway`) on loopback behind a reverse proxy: it serves loopback Hosts,
 * the host of its `--public-url` and those of `--allowed-hosts`, and refuses any other (DNS rebinding) with 421.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { rawRequest } from './raw-http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { CallbackTokens } from '../../src/rap/tokens';
import { cliRunner, waitForLine } from '../cli-process';

const secret = randomBytes(32);
const tokens = new CallbackTokens({ current: 'k1', keys: { k1: secret } });
let gateway: ChildProcess;
let port = 0;

beforeAll(async () => {
  const store = join(inject('scratchDir'), `gateway-hosts-${randomUUID()}.sqlite`);
  const runner = cliRunner(() => ['--address', inject('temporalAddress'), '--store', store], {
    INFINITY_CALLBACK_KEYS: `k1:${secret.toString('base64')}`,
  });
  port = await freePort();
  gateway = runner.start([
    'gateway',
    '--port',
    String(port),
    '--public-url',
    'https://callbacks.example.com',
    '--allowed-hosts',
    'proxy.internal, gw.internal',
  ]);
  // The URL printed is the public one; the port is the one given.
  await waitForLine(gateway, /^gateway (\S+) /);
}, 60_000);

afterAll(async () => {
  gateway?.kill('SIGTERM');
  if (gateway && gateway.exitCode === null) await new Promise((r) => gateway.once('close', r));
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });

const post = (p: number, path: string, host: string, method = 'POST') =>
  rawRequest(
    p,
    path,
    method === 'POST' ? JSON.stringify({ type: 'nonsense', group_id: 't' }) : undefined,
    { host },
    method,
  );

it('serves loopback, --public-url and --allowed-hosts Hosts, and refuses others with 421', async () => {
  const path = `/rap/callback/${tokens.mint({ threadId: 't', callId: 'c' })}`;
  // 400: the Host was served, and the (deliberately wrong) callback was read.
  for (const host of [
    `127.0.0.1:${port}`,
    `localhost:${port}`,
    'callbacks.example.com',
    'proxy.internal:8080',
    'gw.internal',
  ]) {
    expect((await post(port, path, host)).status, host).toBe(400);
  }
  for (const host of ['attacker.example', `attacker.example:${port}`, 'callbacks.example.com.attacker.example']) {
    expect(await post(port, path, host), host).toEqual({
      status: 421,
      body: JSON.stringify({ error: 'this listener does not serve that Host' }),
    });
  }
});
