/**
 * The dev server's Temporal UI in headless Chromium with encrypted payloads (issue 38, finding 4): the codec endpoint
 * it is given carries no token (its settings are any local process's to read), yet it shows a thread's texts
 * decoded, since the browser is this user's (the endpoint checks the connection's user: Linux). Its requests to the
 * endpoint carry no token either. The checks of the token's absence from argv and the settings, and of another user's
 * refusal: test/codec-ui.test.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { launchChromium } from './chromium';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { canCheckPeerUser } from '../../src/codec/peer-user';
import { type LocalSystem, startLocalSystem } from '../../src/local-system';
import { ScriptedModel } from '../../src/model/scripted';

const SECRET = `swordfish-${randomUUID().slice(0, 8)}`;
let system: LocalSystem;
let browser: Browser;
let dataDir: string | undefined;

beforeAll(async () => {
  system = await startLocalSystem({
    model: new ScriptedModel(() => ({ text: 'noted' })),
    dataDir: (dataDir = mkdtempSync(join(tmpdir(), 'ui-codec-test-'))),
    payloadCodec: new EncryptionCodec({ current: 'k1', keys: { k1: randomBytes(32) } }),
    codecEndpoint: {},
    stopOnSignal: false,
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await system?.shutdown();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

it.skipIf(!canCheckPeerUser())(
  "shows an encrypted thread decoded through an endpoint without a token, to this user's browser",
  async () => {
    const threadId = `sealed-${Date.now()}`;
    const thread = system.client.thread(threadId);
    await system.client.sendUserText(threadId, `the password is ${SECRET}`);
    await thread.waitForIdle({ settled: true });

    const page = await browser.newPage({ viewport: { width: 1800, height: 1000 } });
    const codecRequests: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(system.codecUrl!)) codecRequests.push(`${r.url()} ${JSON.stringify(r.headers())}`);
    });
    await page.goto(system.threadUrl(threadId)!);
    const decoded: number[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(system.codecUrl!)) decoded.push(r.status());
    });
    // The user's text (the start's input: startLocalSystem's client starts threads eagerly), decoded in the page.
    await page.getByText(`"text": "the password is ${SECRET}"`).first().waitFor({ timeout: 30_000 });
    expect(codecRequests.length).toBeGreaterThan(0);
    expect(decoded.length).toBeGreaterThan(0);
    expect(decoded.every((s) => s === 200)).toBe(true);
    for (const r of codecRequests) expect(r).not.toContain(system.codecToken!);
    await page.close();
  },
);
