/**
 * Every refusal of the RAP gateway is counted once, by status, in `infinity_callbacks_rejected_total` — the metric the
 * documented alert (`status=~"401|403"`) watches. The gateway is the one a CLI worker runs (`worker --rap …
 * --metrics-port …`), the count is read from that worker's Prometheus endpoint, and the refusals come from each place
 * one can be sent: the token hook (401), the route (400, 403, 404, 405), the framework's body parsing (400, 413, 415),
 * the router (414), the Host guard (421) and the HTTP parser (400).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { type AddressInfo, connect, createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createRapToolServer, type RapToolServer } from '../../src/rap/tool-server';
import { CallbackTokens } from '../../src/rap/tokens';
import { cliRunner } from '../cli-process';
import { eventually } from '../helpers';
import { rawRequest } from './raw-http';
import { sample } from '../metric-sample';

const taskQueue = `rap-metrics-${randomUUID()}`;
const store = join(inject('scratchDir'), `rap-metrics-${randomUUID()}.sqlite`);
const secret = randomBytes(32);
const tokens = new CallbackTokens({ current: 'k1', keys: { k1: secret } });
let toolServer: RapToolServer;
let worker: ChildProcess;
let metricsUrl = '';
let gatewayPort = 0;

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });

beforeAll(async () => {
  toolServer = await createRapToolServer({
    name: 'ci',
    tools: [{ name: 'noop', description: 'Does nothing', inputSchema: { type: 'object' }, handler: async () => 'ok' }],
  });
  const runner = cliRunner(
    () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store],
    {
      INFINITY_CALLBACK_KEYS: `k1:${secret.toString('base64')}`,
      // The server's own random token, handed to the CLI's `--rap` through the environment.
      INFINITY_RAP_TOKEN: toolServer.token!,
    },
  );
  worker = runner.start([
    'worker',
    '--model',
    'simulated',
    '--no-events',
    '--rap',
    toolServer.url,
    '--metrics-port',
    String(await freePort()),
  ]);
  // One reader for all of stdout: the lines come in this order, and a second reader could miss one.
  const seen: string[] = [];
  let stderr = '';
  worker.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: worker.stdout! }).on('line', (l) => seen.push(l));
  await eventually(() => seen.some((l) => l.startsWith('worker ready')), 60_000, `worker ready (stderr: ${stderr})`);
  metricsUrl = /^metrics (\S+)$/.exec(seen.find((l) => l.startsWith('metrics '))!)![1]!;
  gatewayPort = Number(new URL(/^gateway (\S+)$/.exec(seen.find((l) => l.startsWith('gateway '))!)![1]!).port);
}, 90_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  if (worker && worker.exitCode === null) await new Promise((r) => worker.once('close', r));
  await toolServer?.close();
});

/** One request to the worker's gateway, with any `Host` (fetch cannot set it). */
const send = (path: string, body?: string, headers: Record<string, string> = {}, method = 'POST') =>
  rawRequest(gatewayPort, path, body, headers, method);

/** Bytes written on a raw connection; resolves with what the gateway answered once it closes or answers. */
function raw(text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const socket = connect(gatewayPort, '127.0.0.1', () => socket.write(text));
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      got += c;
      if (/\r\n\r\n/.test(got)) socket.destroy();
    });
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
}

it('counts every refusal the gateway sends, once, with its status', async () => {
  const threadId = `ghost-${randomUUID().slice(0, 8)}`; // no such thread
  const token = tokens.mint({ threadId, callId: 'c1' });
  const path = `/rap/callback/${token}`;
  const [, claims, signature] = token.split('.');
  const result = JSON.stringify({ type: 'tool_result', group_id: threadId, id: 'c1', text: 'x' });
  const statuses: number[] = [];
  const expectStatus = async (status: number, answer: Promise<{ status: number }> | Promise<string>) => {
    const a = await answer;
    const got = typeof a === 'string' ? Number(/^HTTP\/1\.1 (\d{3}) /.exec(a)?.[1]) : a.status;
    expect(got).toBe(status);
    statuses.push(status);
  };

  // 401 from the token hook: forged, mutated, and a key id that is a name of Object.prototype.
  await expectStatus(401, send(`/rap/callback/${randomBytes(48).toString('base64url')}`, result));
  await expectStatus(401, send(`/rap/callback/k1.${claims}.${'A'.repeat(signature!.length)}`, result));
  await expectStatus(401, send(`/rap/callback/constructor.${claims}.${signature}`, result));
  // 403 from the route: a valid token used for another call.
  await expectStatus(403, send(path, JSON.stringify({ type: 'tool_result', group_id: threadId, id: 'c2' })));
  // 400 from the route (no such callback type) and from the framework (not JSON).
  await expectStatus(400, send(path, JSON.stringify({ type: 'nonsense', group_id: threadId })));
  await expectStatus(400, send(path, '{"type": "tool_result", '));
  // 415 from the framework: a body that is not JSON.
  await expectStatus(415, send(path, 'type=tool_result', { 'content-type': 'application/x-www-form-urlencoded' }));
  // 405 from the route.
  await expectStatus(405, send(path, undefined, {}, 'GET'));
  // 404 from the route: the token is good, the thread does not exist.
  await expectStatus(404, send(path, result));
  // 413 from the framework's error handler: a body announced over the limit is not read.
  await expectStatus(
    413,
    raw(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${gatewayPort}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${1024 * 1024 * 1024}\r\n\r\n{`,
    ),
  );
  // 414 from the router: a token past the longest parameter.
  await expectStatus(414, send(`/rap/callback/${'A'.repeat(5000)}`, result));
  // 421 from the Host guard: a rebound DNS name in front of a loopback gateway.
  await expectStatus(421, send(path, result, { host: 'attacker.example' }));
  // 400 from the HTTP parser: not HTTP at all.
  await expectStatus(400, raw('NOT HTTP\r\n\r\n'));

  const expected = new Map<number, number>();
  for (const s of statuses) expected.set(s, (expected.get(s) ?? 0) + 1);
  const total = statuses.length;
  const text = await eventually(async () => {
    const t = await (await fetch(metricsUrl)).text();
    return sample(t, 'infinity_callbacks_rejected_total') >= total ? t : undefined;
  }, 30_000);
  const counted = Object.fromEntries(
    [...expected.keys()].map((s) => [s, sample(text, 'infinity_callbacks_rejected_total', { status: String(s) })]),
  );
  expect(counted).toEqual(Object.fromEntries(expected));
  // Once each: nothing else was counted (a 500, or a refusal counted twice).
  expect(sample(text, 'infinity_callbacks_rejected_total')).toBe(total);
}, 120_000);
