/**
 * The Temporal UI of the dev server, in headless Chromium (Debian's, driven by playwright-core): a thread is found by
 * its search attributes, and its event history shows the slice summaries and the signals that fed it.
 * RECORD_SCREENSHOT=1 also writes docs/temporal-ui-thread.png for the README.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalSystem, startLocalSystem } from '../../src/local-system';
import { SimulatedModel } from '../../src/model/simulated';
import { buildStatusDemoTool } from '../../src/tools/demo';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let system: LocalSystem;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium) or set CHROMIUM_PATH`);
  system = await startLocalSystem({
    model: new SimulatedModel({ completionBytes: 300 }),
    tools: [buildStatusDemoTool(200)],
    dataDir: mkdtempSync(join(tmpdir(), 'ui-test-')),
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Without the background-networking flags Chromium keeps calling out to a network this machine does not have.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

afterAll(async () => {
  await browser?.close();
  await system?.shutdown();
});

describe('Temporal UI', () => {
  it('finds a thread by search attribute and shows its slices and signals', async () => {
    const threadId = `ui-${Date.now()}`;
    const thread = await system.client.startThread({ threadId });
    await thread.sendUserText('Is build 42 green?');
    await thread.waitForIdle({ settled: true });

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const query = `AgentStatus="idle" AND ThreadKind="root" AND WorkflowId="${threadId}"`;
    await page.goto(`${system.devServer.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
    await page.getByRole('link', { name: threadId }).first().click({ timeout: 30_000 });

    // The timeline labels a local slice with its activity type (UI 2.54); its summary is in the event history.
    await page.getByText('runSliceLocal').first().waitFor({ timeout: 30_000 });
    const timeline = await page.innerText('body');
    expect(timeline).toContain('agentThread');
    if (process.env.RECORD_SCREENSHOT === '1') await page.screenshot({ path: join(__dirname, '..', '..', 'docs', 'temporal-ui-thread.png') });

    // The event history lists the signals that fed the thread (the user's text, the tool's result) and each slice, a
    // local activity with what it did as its summary (decision 50).
    await page.getByText('Event History').first().click();
    await page.getByText('slice 2: result of get_build_status').first().waitFor({ timeout: 30_000 });
    const events = await page.innerText('body');
    expect(events).toContain('slice 1: user "Is build 42 green?"');
    expect(events.match(/Workflow Execution Signaled/g)?.length).toBe(2);
    expect(events.match(/Local Activity/g)?.length).toBe(2);
    expect(events).not.toMatch(/Activity Task Scheduled/);
    expect(events).toMatch(/Signal Name\s+input/);
    await page.close();
  });
});
