/**
 * The soak tier's heavy scenarios: a 3,000-input flood at a lowered run limit, and a worker process killed in the
 * middle of a streaming slice. The same guarantees as the light ones: nothing lost, nothing twice, each sender's
 * order kept, nothing dropped.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { AgentClient } from '../../src/client/agent-client';
import { userText } from '../../src/tools/messages';
import { startWorkerProcess } from '../crash-worker';
import { SLOW_TEXT } from '../fixtures/crash-constants';
import { eventually, uid } from '../helpers';
import { updateTrail } from '../update-trail';
import { agentOf } from './agents';
import type { MatrixCell } from './matrix';
import type { GuaranteeSystem } from './systems';

/** 3,000 texts from 20 senders, each sending its own in order; runs continue-as-new every 200 events. */
export async function floodScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const threadId = uid('flood');
  if (cell.slicePath === 'retry') sys.failOnce.add(threadId);
  const client = sys.client(cell.slicePath, { maxRunEvents: 200 });
  await client.startThread({ threadId, ...agentOf(cell) });
  const senders = 20;
  const each = 150;
  await Promise.all(
    Array.from({ length: senders }, async (_, s) => {
      for (let i = 0; i < each; i++) {
        const message = userText(threadId, `flood-${s}-${i}`);
        if (cell.delivery === 'ack') {
          // Runs continue-as-new under the flood: an update the server hands the next run again (temporalio/temporal
          // issue 6375), or whose run ended under it, is still answered as delivered, once.
          const r = await client.deliver(message, { acknowledge: true });
          if (!r.delivered)
            expect.fail(`${JSON.stringify(r)}\n${await updateTrail(client.temporal, threadId, message.id)}`);
        } else expect((await client.deliver(message)).delivered).toBe(true);
      }
    }),
  );
  const thread = client.thread(threadId);
  const texts = async () =>
    (await thread.history()).flatMap((h) => (h.kind === 'user' ? [h.text.replace(/^<interrupt>/, '')] : []));
  await eventually(async () => (await texts()).length >= senders * each, 540_000, 'every text committed');
  const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
  expect(status.dropped, 'no input dropped').toEqual({});
  const committed = await texts();
  expect(committed, 'nothing twice').toHaveLength(senders * each);
  expect(new Set(committed).size, 'nothing lost').toBe(senders * each);
  for (let s = 0; s < senders; s++) {
    const mine = committed.filter((t) => t.startsWith(`flood-${s}-`));
    expect(mine, `sender ${s}'s order`).toEqual(Array.from({ length: each }, (_, i) => `flood-${s}-${i}`));
  }
  expect(status.runs, 'the run continued as new').toBeGreaterThanOrEqual(2);
}

/**
 * A worker process (the README's createAgentWorker, test/fixtures/worker-process.ts) SIGKILLed while it streams a
 * slice, then a new one: the turn is committed once, whole, and nothing was dropped.
 */
export async function workerKilledScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  // A task queue of its own: the system's in-process worker must not take the slice.
  const taskQueue = `killed-${randomUUID()}`;
  const client = new AgentClient({
    client: sys.client('local').temporal,
    taskQueue,
    store: sys.store,
    signalNames: cell.signalNames,
    ...(cell.slicePath === 'adopted' && { threadOptions: { localSliceBudgetMs: 50 } }),
  });
  const procs = [startWorkerProcess(taskQueue, sys.storeArg)];
  try {
    await procs[0]!.waitFor(/^READY$/);
    const thread = await client.startThread({ threadId: uid('killed') });
    if (cell.delivery === 'ack') await client.deliver(userText(thread.threadId, 'write slowly'), { acknowledge: true });
    else await thread.sendUserText('write slowly');
    await procs[0]!.waitFor(/^DELTA 10$/);
    procs[0]!.child.kill('SIGKILL');
    await procs[0]!.exited;
    procs.push(startWorkerProcess(taskQueue, sys.storeArg));
    await procs[1]!.waitFor(/^READY$/);
    const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
    expect(await thread.history()).toEqual([
      { kind: 'user', text: 'write slowly' },
      { kind: 'assistant', text: SLOW_TEXT },
    ]);
    expect(status.dropped, 'no input dropped').toEqual({});
    await eventually(() => procs[1]!.lines.some((l) => l.startsWith('COMMITTED')), 30_000, 'the commit');
    expect(
      procs[1]!.lines.filter((l) => l.startsWith('COMMITTED')),
      'committed once',
    ).toHaveLength(1);
  } finally {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  }
}
