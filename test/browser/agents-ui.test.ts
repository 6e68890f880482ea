/**
 * Several agents in the Temporal UI (issue 40): examples/agents.ts's two agents on one worker, a thread of the coder
 * and its reviewer child, listed by the `AgentName` search attribute with the agent, kind and parent of each. The
 * child's own page shows its parent, and its agent among its search attributes and in its memo. RECORD_SCREENSHOT=1 also writes
 * docs/ui-agents.png (the list) for docs/guide.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coder, reviewer, TASK } from '../../examples/agents';
import { type LocalSystem, startLocalSystem } from '../../src/local-system';
import { launchChromium, until } from './chromium';

const DOCS = join(__dirname, '..', '..', 'docs');
let system: LocalSystem;
let browser: Browser;
let dataDir: string | undefined;

beforeAll(async () => {
  system = await startLocalSystem({
    agents: [coder, reviewer],
    dataDir: (dataDir = mkdtempSync(join(tmpdir(), 'ui-agents-test-'))),
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await system?.shutdown();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const shot = async (page: Page, name: string) => {
  if (process.env.RECORD_SCREENSHOT === '1') await page.screenshot({ path: join(DOCS, name) });
};

describe('agents in the Temporal UI', () => {
  it('lists a coder thread and its reviewer child by AgentName, each with its agent', async () => {
    const threadId = `coder-${Date.now()}`;
    const thread = system.client.thread(threadId);
    await system.client.sendUserText(threadId, TASK, { agent: 'coder' });
    await until(async () => (await thread.history()).some((i) => i.kind === 'subscription_event'), 'the report');
    const { children } = await thread.waitForIdle({ settled: true });
    const childId = children[0]!;
    expect((await system.client.thread(childId).waitForIdle({ settled: true })).agent).toBe('reviewer');
    // Visibility is eventually consistent: the child is listed by its agent before the page asks.
    await until(async () => {
      const found: string[] = [];
      for await (const s of system.client.listThreads({ agent: 'reviewer' })) found.push(s.threadId);
      return found.includes(childId);
    }, 'the child listed by its agent');

    const page = await browser.newPage({ viewport: { width: 1800, height: 560 } });
    const query = "AgentName IN ('coder', 'reviewer')";
    await page.goto(`${system.devServer.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
    await page.getByRole('button', { name: 'Configure Columns' }).click({ timeout: 30_000 });
    for (const column of ['Title', 'AgentName', 'ThreadKind', 'ParentThreadId'])
      await page.getByRole('button', { name: `Add ${column} column` }).click();
    for (const column of ['Run ID', 'Type', 'Start', 'End'])
      await page.getByRole('button', { name: `Remove ${column} column` }).click();
    await page.getByRole('button', { name: /close/i }).filter({ visible: true }).first().click();
    await page.getByText('Configure Workflows Table').waitFor({ state: 'hidden' });
    await page.getByText(childId).first().waitFor({ timeout: 30_000 });
    const rows = await page.locator('tbody tr').allInnerTexts();
    const row = (id: string) => rows.find((r) => r.startsWith(`Select Workflow ${id}`)) ?? '';
    expect(row(childId)).toMatch(/\breviewer\b[\s\S]*\bchild\b/);
    expect(row(childId)).toContain(threadId); // its ParentThreadId
    expect(row(threadId)).toContain(TASK);
    expect(row(threadId)).toMatch(/\bcoder\b[\s\S]*\broot\b/);
    await shot(page, 'ui-agents.png');

    // The child's own page: its parent, and its agent among its search attributes and in its memo.
    await page.goto(system.threadUrl(childId)!);
    await page.getByRole('tab', { name: 'Search Attributes' }).click({ timeout: 30_000 });
    await page.getByText('AgentName').first().waitFor({ timeout: 30_000 });
    const attributes = await page.innerText('body');
    expect(attributes).toMatch(/Parent Workflow\s+coder-\d+/);
    expect(attributes).toMatch(/AgentName[\s"':]+reviewer/);
    await page.getByRole('tab', { name: 'Memo' }).click();
    await page
      .getByText(/"agent": "reviewer"/)
      .first()
      .waitFor({ timeout: 30_000 });
    await page.close();
  });
});
