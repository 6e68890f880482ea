/**
 * Budgets are exact after crashes (issue 27 §1), with real worker processes SIGKILLed: a slice is billed in its
 * commit's transaction, so a worker killed after the provider answered but before the commit bills nothing for that
 * attempt (the retry that commits bills once), and a worker killed after the commit but before it reported bills
 * nothing more when the retried slice finds its commit.
 */
import { expect, it } from 'vitest';
import { ScriptedModel } from '../../src/model/scripted';
import { workerProcessSuite } from '../crash-worker';
import { uid } from '../helpers';

// The test process runs no worker: it starts threads and reads the store the worker processes write.
const suite = workerProcessSuite(new ScriptedModel(() => ({ text: 'unused' })));
const { startWorker } = suite;

/** The scripted worker's slices report 10 + 10 tokens each (ScriptedModel's default usage). */
const ONE_SLICE = { inputTokens: 10, outputTokens: 10, totalTokens: 20, slices: 1 };

it('a worker killed while the provider streams bills nothing; the committed retry bills once', async () => {
  const a = startWorker();
  await a.waitFor(/^READY$/);
  const thread = await suite
    .sys()
    .client.startThread({ threadId: uid('budget-crash-stream'), budget: { totalTokens: 1000 } });
  await thread.sendUserText('write slowly');
  await a.waitFor(/^DELTA 10$/);
  a.child.kill('SIGKILL');
  await a.exited;
  expect((await suite.sys().client.budgets({ thread: thread.threadId }))[0]!.spend.slices).toBe(0);

  const b = startWorker();
  await b.waitFor(/^READY$/);
  await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  const [own, tree] = await suite.sys().client.budgets({ thread: thread.threadId }, { tree: thread.threadId });
  expect(own!.spend).toMatchObject(ONE_SLICE);
  expect(tree!.spend).toMatchObject(ONE_SLICE);
});

it('a worker killed after its commit, before reporting, bills the slice once', async () => {
  const a = startWorker({ CRASH_AFTER_COMMIT: '1' });
  await a.waitFor(/^READY$/);
  const thread = await suite
    .sys()
    .client.startThread({ threadId: uid('budget-crash-commit'), budget: { totalTokens: 1000 } });
  await thread.sendUserText('call a tool');
  await a.exited;
  expect(a.lines.filter((l) => l.startsWith('COMMITTED'))).toHaveLength(1);

  const b = startWorker();
  await b.waitFor(/^READY$/);
  // The retried slice finds its commit and dispatches the call: no second completion, no second bill.
  await b.waitFor(/^DISPATCHED /);
  await thread.waitForIdle({ timeoutMs: 60_000 });
  expect(b.lines.some((l) => l.startsWith('COMMITTED'))).toBe(false);
  const [own] = await suite.sys().client.budgets({ thread: thread.threadId });
  expect(own!.spend).toMatchObject(ONE_SLICE);
});
