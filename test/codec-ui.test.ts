/**
 * `startLocalSystem({ payloadCodec, codecEndpoint })` with a dev server of its own and its Web UI (issue 38, finding
 * 4): the codec token is neither on the dev server's command line (`/proc/<pid>/cmdline`, which every local user can
 * read) nor in its UI's settings (`/api/v1/settings`, which every local process can fetch from the UI's port), and the
 * UI's request still decodes: a browser of this user at the UI's origin is served, a process of another user that
 * copies the request is not (as root: one run as nobody). The real UI in Chromium: test/browser/codec-ui.test.ts.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EncryptionCodec } from '../src/codec/encryption-codec';
import { canCheckPeerUser } from '../src/codec/peer-user';
import { type LocalSystem, startLocalSystem } from '../src/local-system';
import { ScriptedModel } from '../src/model/scripted';

const SECRET = `swordfish-${randomUUID().slice(0, 8)}`;
const codec = new EncryptionCodec({ current: 'k1', keys: { k1: randomBytes(32) } });
let sys: LocalSystem;
/** The thread's encrypted payloads, in the codec protocol's JSON, as the UI sends them. */
let body: string;

beforeAll(async () => {
  sys = await startLocalSystem({
    model: new ScriptedModel(() => ({ text: 'noted' })),
    dataDir: join(inject('scratchDir'), `codec-ui-${randomUUID().slice(0, 8)}`),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    payloadCodec: codec,
    codecEndpoint: {},
    stopOnSignal: false,
  });
  const thread = await sys.client.startThread({ threadId: `codec-ui-${randomUUID().slice(0, 8)}` });
  await thread.sendUserText(`the password is ${SECRET}`);
  await thread.waitForIdle({ settled: true });
  const history = await sys.client.temporal.workflow.getHandle(thread.threadId).fetchHistory();
  const payloads: Payload[] = [];
  for (const e of history.events ?? [])
    payloads.push(...((e.workflowExecutionSignaledEventAttributes?.input?.payloads ?? []) as Payload[]));
  expect(payloads.length).toBeGreaterThan(0);
  body = JSON.stringify({
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  });
  expect(body).not.toContain(SECRET);
}, 120_000);

afterAll(async () => {
  await sys?.shutdown();
});

/** The UI's codec settings, as any local process reads them. */
async function uiSettings(): Promise<{ text: string; endpoint: string }> {
  const res = await fetch(`${sys.devServer.uiUrl}/api/v1/settings`);
  const text = await res.text();
  return { text, endpoint: (JSON.parse(text) as { Codec: { Endpoint: string } }).Codec.Endpoint };
}

/** The request the UI's page sends (src/lib/services/data-encoder.ts of temporalio/ui), from this process. */
const asTheUi = (endpoint: string, headers: Record<string, string> = { origin: sys.devServer.uiUrl! }) =>
  fetch(`${endpoint}/decode?preserveStorageRefs=true`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
  });

const decodedText = async (res: Response) =>
  ((await res.json()) as { payloads: { data: string }[] }).payloads
    .map((p) => Buffer.from(p.data, 'base64').toString())
    .join('\n');

describe('the codec token, published nowhere', () => {
  it("is not on the dev server's command line nor in its environment, and the settings file is gone", () => {
    const argv = readFileSync(`/proc/${sys.devServer.pid}/cmdline`, 'utf8').split('\0');
    expect(argv[0]).toMatch(/temporal$/);
    expect(argv.join(' ')).not.toContain(sys.codecToken!);
    expect(argv.join(' ')).not.toContain('ui-codec-endpoint');
    expect(readFileSync(`/proc/${sys.devServer.pid}/environ`, 'utf8')).not.toContain(sys.codecToken!);
    // The endpoint went through a file only the CLI read at its start, removed once the server ran.
    const file = argv[argv.indexOf('--env-file') + 1]!;
    expect(existsSync(file)).toBe(false);
  });

  it("is not in the UI's settings, which name the endpoint without it", async () => {
    const { text, endpoint } = await uiSettings();
    expect(text).not.toContain(sys.codecToken!);
    expect(text).not.toContain(encodeURIComponent(sys.codecToken!));
    if (canCheckPeerUser()) expect(endpoint).toBe(sys.codecUrl);
  });
});

describe.skipIf(!canCheckPeerUser())("the UI's request (Linux: the connection's user is checked)", () => {
  it("decodes for this user's browser at the UI's origin, under either loopback name", async () => {
    const { endpoint } = await uiSettings();
    const ok = await asTheUi(endpoint);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(sys.devServer.uiUrl);
    expect(await decodedText(ok)).toContain(SECRET);
    const byName = await asTheUi(endpoint, { origin: sys.devServer.uiUrl!.replace('127.0.0.1', 'localhost') });
    expect(byName.status).toBe(200);
  });

  it('refuses the same request without the UI origin, and decodes for the token as before', async () => {
    const { endpoint } = await uiSettings();
    expect((await asTheUi(endpoint, {})).status).toBe(401);
    expect((await asTheUi(endpoint, { origin: 'http://127.0.0.1:1' })).status).toBe(401);
    expect((await asTheUi(endpoint, { origin: 'https://evil.example' })).status).toBe(401);
    const bearer = await asTheUi(endpoint, { authorization: `Bearer ${sys.codecToken!}` });
    expect(bearer.status).toBe(200);
    expect(await decodedText(bearer)).toContain(SECRET);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "refuses another user's process that copies the UI's request, Origin and all (as root: nobody)",
    async () => {
      const { endpoint } = await uiSettings();
      const script = `fetch(process.argv[1] + '/decode?preserveStorageRefs=true', { method: 'POST', body: process.argv[3],
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: process.argv[2] } })
        .then(async (r) => process.stdout.write(r.status + ' ' + (await r.text())))`;
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          ['-e', script, endpoint, sys.devServer.uiUrl!, body],
          { uid: 65534, gid: 65534, cwd: '/', env: { PATH: process.env.PATH } },
          (e, stdout) => (e ? reject(e) : resolve(stdout)),
        ),
      );
      expect(out).toMatch(/^401 /);
      expect(out).not.toContain(SECRET);
    },
  );
});

describe('tokenInUiSettings: for a browser that is no process of this user', () => {
  it("gives the UI the token in the endpoint's path (readable by any local user there), still off the command line", async () => {
    const other = await startLocalSystem({
      model: new ScriptedModel(() => ({ text: 'noted' })),
      dataDir: join(inject('scratchDir'), `codec-ui-token-${randomUUID().slice(0, 8)}`),
      workflowBundle: { codePath: inject('workflowBundlePath') },
      payloadCodec: codec,
      codecEndpoint: { tokenInUiSettings: true },
      stopOnSignal: false,
    });
    try {
      const res = await fetch(`${other.devServer.uiUrl}/api/v1/settings`);
      const endpoint = ((await res.json()) as { Codec: { Endpoint: string } }).Codec.Endpoint;
      expect(endpoint).toBe(`${other.codecUrl}/${other.codecToken}`);
      expect(readFileSync(`/proc/${other.devServer.pid}/cmdline`, 'utf8')).not.toContain(other.codecToken!);
    } finally {
      await other.shutdown();
    }
  });
});
