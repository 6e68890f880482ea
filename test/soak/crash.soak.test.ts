/**
 * Real processes: a worker SIGKILLed mid-slice, or right after it committed, is replaced by a new one; the thread
 * completes and its committed history has no lost or duplicated turn.
 */
import { expect, it } from 'vitest';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { workerProcessSuite } from '../crash-worker';
import { SLOW_TEXT } from '../fixtures/crash-constants';
import { render, uid } from '../helpers';

// The test process runs no worker: it starts threads and reads the store the worker processes write.
const suite = workerProcessSuite(new ScriptedModel(() => ({ text: 'unused' })));
const { startWorker } = suite;

it('survives a worker killed in the middle of a streaming slice', async () => {
  const a = startWorker();
  await a.waitFor(/^READY$/);
  const thread = await suite.sys().client.startThread({ threadId: uid('crash-stream') });
  await thread.sendUserText('write slowly');
  await a.waitFor(/^DELTA 10$/);
  a.child.kill('SIGKILL');
  await a.exited;
  expect(a.lines.some((l) => l.startsWith('COMMITTED'))).toBe(false);

  const b = startWorker();
  await b.waitFor(/^READY$/);
  const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  expect(render(await thread.history())).toEqual(['user: write slowly', `assistant: ${SLOW_TEXT}`]);
  expect(status.slices).toBe(1);
  // The new worker streamed the whole turn again from the start, and committed it once.
  await b.waitFor(/^COMMITTED /);
  expect(b.lines).toContain('DELTA 0');
  expect(b.lines.filter((l) => l.startsWith('COMMITTED'))).toHaveLength(1);
});

it('does not duplicate a turn when the worker dies after committing, before reporting', async () => {
  const a = startWorker({ CRASH_AFTER_COMMIT: '1' });
  await a.waitFor(/^READY$/);
  const thread = await suite.sys().client.startThread({ threadId: uid('crash-commit') });
  await thread.sendUserText('call a tool');
  await a.exited;
  expect(a.lines.filter((l) => l.startsWith('COMMITTED'))).toHaveLength(1);
  expect(a.lines.some((l) => l.startsWith('DISPATCHED'))).toBe(false);

  const b = startWorker();
  await b.waitFor(/^READY$/);
  // The retried slice finds its commit, dispatches the call (tools are idempotent per call id) and reports.
  await b.waitFor(/^DISPATCHED /);
  const status = await thread.waitForIdle({ timeoutMs: 60_000 });
  expect(status).toMatchObject({ status: 'waiting_tool', slices: 1, historyLength: 3 });
  expect(render(await thread.history())).toEqual(['user: call a tool', 'assistant: calling', 'call #1 note {"n":1}']);
  const reader = new SqliteConversationStore(suite.sys().storePath, { readonly: true });
  try {
    expect(await reader.length(thread.threadId)).toBe(3);
  } finally {
    await reader.close();
  }
});
