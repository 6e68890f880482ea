/**
 * The Temporal UI of the dev server, in headless Chromium (Debian's, driven by playwright-core), reading like the
 * conversation (issue 17 §2): the list shows threads by their titles (the `Title` column), a thread's signals are named
 * by kind with the readable part of their payload first, its slice summaries name the call with its arguments, the
 * result and the reply before, its current details the last reply and where the history is, and a child is shown by
 * its task. RECORD_SCREENSHOT=1 also writes docs/ui-list.png, ui-thread.png, ui-details.png, ui-child.png and
 * ui-signal.png for the README, and ui-rewind.png (a rewound thread's event history) for docs/fork.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium, until } from './chromium';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalSystem, startLocalSystem } from '../../src/local-system';
import { buildStatusDemoTool } from '../../src/tools/demo';
import { conversationModel, QUESTION, REPORT } from './conversation';

const DOCS = join(__dirname, '..', '..', 'docs');
let system: LocalSystem;
let browser: Browser;
/** The system's data dir, removed when the file is done. */
let dataDir: string | undefined;

beforeAll(async () => {
  // Its own dev server: inputs go by kind and titles into `Title` (decision 62).
  system = await startLocalSystem({
    model: conversationModel(),
    tools: [buildStatusDemoTool(100)],
    dataDir: (dataDir = mkdtempSync(join(tmpdir(), 'ui-test-'))),
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await system?.shutdown();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The page's text and its frames' (the UI renders summaries and details, markdown, in sandboxed iframes). */
async function allText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((f) =>
      f
        .locator('body')
        .innerText()
        .catch(() => ''),
    ),
  );
  return texts.join('\n');
}

/** Waits until the page or one of its frames shows `text`. */
const showing = (page: Page, text: string) =>
  until(async () => (await allText(page)).includes(text) && (await allText(page)), `the UI to show "${text}"`);

/** Asks the thread for the flaky tests and waits until its helper child's report is answered and all is settled. */
async function askForTheReport(thread: ReturnType<LocalSystem['client']['thread']>): Promise<void> {
  await thread.sendUserText('Find the flaky tests of build 42');
  await until(
    async () => (await thread.history()).some((i) => i.kind === 'assistant' && i.text.endsWith(REPORT)),
    'the report',
  );
  await thread.waitForIdle({ settled: true });
}

const shot = async (page: Page, name: string) => {
  if (process.env.RECORD_SCREENSHOT === '1') await page.screenshot({ path: join(DOCS, name) });
};

describe('Temporal UI', () => {
  it('reads like the conversation: titles in the list, a thread, a child and a signal in words', async () => {
    const threadId = `build-42-${Date.now()}`;
    await system.client.sendUserText(threadId, QUESTION);
    const thread = system.client.thread(threadId);
    await thread.waitForIdle({ settled: true });
    await askForTheReport(thread);
    const [childId] = (await thread.status()).children;
    await system.client.thread(childId!).waitForIdle({ settled: true });
    const page = await browser.newPage({ viewport: { width: 1800, height: 1000 } });

    // The list, with the Title column added the way a user does (the UI keeps the choice in the browser).
    await page.goto(
      `${system.devServer.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent('WorkflowType="agentThread"')}`,
    );
    await page.getByRole('button', { name: 'Configure Columns' }).click({ timeout: 30_000 });
    for (const column of ['Title', 'ThreadKind', 'AgentStatus'])
      await page.getByRole('button', { name: `Add ${column} column` }).click();
    await page.getByRole('button', { name: 'Remove Run ID column' }).click();
    await page.getByRole('button', { name: /close/i }).filter({ visible: true }).first().click();
    await page.getByText('Configure Workflows Table').waitFor({ state: 'hidden' });
    await page.getByText('Is build 42 green? Please check.').first().waitFor({ timeout: 30_000 });
    const list = await page.innerText('body');
    expect(list).toContain('Collect the flaky tests of build 42 and report them back');
    expect(list).toMatch(/Title/);
    await shot(page, 'ui-list.png');

    // A thread: its timeline names the signals by kind and the child by its task; its event history shows what each
    // slice was given and what the slice before it did.
    await page.goto(system.threadUrl(threadId)!);
    await page.getByText('Collect the flaky tests of build 42').first().waitFor({ timeout: 30_000 });
    const timeline = await page.innerText('body');
    for (const name of ['user_text', 'tool_result', 'report']) expect(timeline).toContain(name);
    // startLocalSystem's client starts a thread eagerly (decision 72): the first text is the start's input, shown
    // first in the page's Input; the texts after it come by signal.
    expect(timeline).toMatch(/"firstInput": \{\s+"text": "Is build 42 green\?\s+Please check\."/);
    expect(timeline).not.toMatch(/^input$/m);
    await page.getByRole('tab', { name: /Event History/ }).click();
    await page
      .getByText('slice 2: get_build_status {"build_id":"42"} → "Build 42: green (all 318 tests passed)"')
      .first()
      .waitFor({ timeout: 30_000 });
    const events = await page.innerText('body');
    expect(events).toContain('slice 1: user "Is build 42 green? Please check."');
    expect(events).toContain('slice 3: user "Find the flaky tests of build 42" — after reply "Build 42 is green."');
    expect(events).toContain('slice 5: report from');
    expect(events).toMatch(/Signal Name\s+user_text/);
    expect(events).toMatch(/Signal Name\s+tool_result/);
    expect(events).toMatch(/Signal Name\s+report/);
    // The compact view: one line per signal (its name, its payload's start) and per slice (its summary).
    await page.getByText('Compact', { exact: true }).click();
    await page.getByText('Signal received').first().waitFor({ timeout: 30_000 });
    const compact = await page.innerText('body');
    // (The UI shows each payload's first 60 characters or so: the readable part.)
    expect(compact).toContain('{"text":"Find the flaky tests of build 42"');
    expect(compact).toContain('{"tool":"get_build_status","text":"Build 42: green');
    expect(compact).toContain('{"text":"Report from child thread: No flaky tests');
    await page.getByText('Event History', { exact: true }).filter({ visible: true }).first().scrollIntoViewIfNeeded();
    await page.mouse.wheel(0, 420);
    await shot(page, 'ui-thread.png');
    await page.getByText('All', { exact: true }).filter({ visible: true }).first().click();

    // Its summary, details and current details: the title, where the history is, the last reply in full.
    await page.getByRole('tab', { name: 'User Metadata' }).click();
    const metadata = await showing(page, `last reply: The helper says: ${REPORT}`);
    expect(metadata).toContain('Is build 42 green? Please check.');
    expect(metadata).toContain(`last reply: The helper says: ${REPORT}`);
    expect(metadata).toContain(`infinity-temporal history ${threadId}`);
    await shot(page, 'ui-details.png');

    // A signal's payload: the tool's name and its text first, not a UUID.
    await page.getByRole('tab', { name: /Event History/ }).click();
    const signal = page.getByText('tool_result', { exact: true }).filter({ visible: true }).first();
    await signal.click();
    await page.getByText('"tool": "get_build_status"').first().waitFor({ timeout: 30_000 });
    const payload = await page.innerText('body');
    expect(payload).toMatch(/\{\s*"tool": "get_build_status",\s*"text": "Build 42: green \(all 318 tests passed\)",/);
    await signal.scrollIntoViewIfNeeded();
    await page.mouse.wheel(0, 250);
    await shot(page, 'ui-signal.png');

    // A child: its task as summary, its parent in its details, its report as its last step.
    await page.goto(system.threadUrl(childId!)!);
    await page.getByRole('tab', { name: 'User Metadata' }).click();
    const child = await showing(page, 'last reply: Reported.');
    expect(child).toContain('Collect the flaky tests of build 42');
    expect(child).toContain(`child thread of ${threadId}`);
    expect(child).toContain('last reply: Reported.');
    await shot(page, 'ui-child.png');
    await page.close();
  });

  it('shows a rewind as a step of its own, and the child it archived as canceled (issue 28 §2)', async () => {
    const threadId = `rewind-42-${Date.now()}`;
    const thread = system.client.thread(threadId);
    await system.client.sendUserText(threadId, QUESTION);
    await thread.waitForIdle({ settled: true });
    const to = (await thread.history()).length;
    await askForTheReport(thread);
    const [childId] = (await thread.status()).children;
    const rewound = await system.client.rewindThread(threadId, { to });
    expect(rewound.branch).toBe(1);

    const page = await browser.newPage({ viewport: { width: 1800, height: 1000 } });
    await page.goto(system.threadUrl(threadId)!);
    await page.getByRole('tab', { name: /Event History/ }).click();
    await page.getByText(`rewind to item ${to}`).first().waitFor({ timeout: 30_000 });
    // The child's cancel comes in the workflow task after the activity's: the UI shows it as it refreshes.
    await page.getByText('Request Cancel External Workflow Execution Initiated').first().waitFor({ timeout: 30_000 });
    expect(await page.innerText('body')).toContain('rewindThread');
    await page.getByText(`rewind to item ${to}`).first().scrollIntoViewIfNeeded();
    await shot(page, 'ui-rewind.png');

    await page.goto(system.threadUrl(childId!)!);
    await page.getByText('Canceled').first().waitFor({ timeout: 30_000 });
    await page.close();
  });
});
