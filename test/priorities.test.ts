/**
 * Task priority and fairness on the real dev server: what threads start with, what children inherit, and that a
 * backlog on the task queue is served by priority key and shared between fairness keys. Backlogs are built with no
 * worker polling, then a worker that takes one workflow task at a time drains them; the order in which threads' first
 * workflow tasks started is read from their Temporal histories.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { decodePriority } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { InvalidInputError } from '../src/inbox/errors';
import type { ThreadPriority } from '../src/core/priority';
import { ScriptedModel } from '../src/model/scripted';
import { SqliteConversationStore } from '../src/store/sqlite';
import { createAgentWorker } from '../src/worker/create-worker';
import { treeScript } from './fixtures/tree-script';
import { checkReplay, startTestSystem, type TestSystem, uid } from './helpers';
import { join } from 'node:path';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(treeScript) });
});
afterAll(async () => {
  await sys?.shutdown();
});

/** The priority Temporal holds for a thread, without the proto's empty fields (0 and '' mean unset). */
async function priorityOf(temporal: Client, threadId: string): Promise<ThreadPriority> {
  const p = decodePriority(
    (await temporal.workflow.getHandle(threadId).describe()).raw.workflowExecutionInfo?.priority,
  );
  return Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined && v !== 0 && v !== ''));
}

describe('priorities', () => {
  it('starts root threads first in their own fair share, and their children behind them in the same share', async () => {
    const root = await sys.client.startThread({ threadId: uid('prio-root') });
    await root.sendUserText('spawn report:A done');
    const status = await root.waitForIdle({ settled: true });
    expect(status.children).toHaveLength(1);
    expect(await priorityOf(sys.temporal, root.threadId)).toEqual({ priorityKey: 2, fairnessKey: root.threadId });
    // The child's own start sets only its key; Temporal fills in the fairness key it inherits.
    expect(await priorityOf(sys.temporal, status.children[0]!)).toEqual({ priorityKey: 4, fairnessKey: root.threadId });
    await checkReplay(root, 'priority-spawn');

    // A batch root (5) keeps its children at 5; a given fairness key and weight are carried as given.
    const batch = sys.client.thread(uid('prio-batch'));
    await batch.sendUserText('spawn report:B done', {
      priority: { priorityKey: 5, fairnessKey: 'tenant-a', fairnessWeight: 2 },
    });
    const batchStatus = await batch.waitForIdle({ settled: true });
    expect(await priorityOf(sys.temporal, batch.threadId)).toEqual({
      priorityKey: 5,
      fairnessKey: 'tenant-a',
      fairnessWeight: 2,
    });
    expect(await priorityOf(sys.temporal, batchStatus.children[0]!)).toEqual({
      priorityKey: 5,
      fairnessKey: 'tenant-a',
      fairnessWeight: 2,
    });
  }, 60_000);

  it('refuses a priority out of range with InvalidInputError, before anything is sent', async () => {
    const bad: ThreadPriority[] = [
      { priorityKey: 0 },
      { priorityKey: 6 },
      { priorityKey: 2.5 },
      { fairnessKey: 'x'.repeat(65) },
      { fairnessKey: '' },
      { fairnessWeight: 0 },
    ];
    for (const priority of bad) {
      const threadId = uid('prio-bad');
      await expect(sys.client.sendUserText(threadId, 'hello', { priority })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(sys.client.startThread({ threadId, priority })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(sys.temporal.workflow.getHandle(threadId).describe()).rejects.toThrow();
    }
  });
});

/**
 * Starts one thread per entry (in order) while no worker polls, then drains the backlog with a worker that runs one
 * workflow task at a time; returns the thread ids in the order their first workflow task started.
 */
async function drainOrder(threads: { id: string; priority: ThreadPriority }[]): Promise<string[]> {
  const taskQueue = `prio-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const store = new SqliteConversationStore(join(inject('scratchDir'), `prio-${randomUUID()}.sqlite`));
  const client = new AgentClient({ client: new Client({ connection }), taskQueue, store });
  for (const t of threads) await client.sendUserText(t.id, 'hello', { priority: t.priority });
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model: new ScriptedModel(() => ({ text: 'ok' })),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    workerOptions: { maxConcurrentWorkflowTaskExecutions: 1, maxCachedWorkflows: 0 },
  });
  const running = worker.run();
  const firstStarted = async (id: string) => {
    const history = await client.temporal.workflow.getHandle(id).fetchHistory();
    const started = history.events!.find((e) => e.workflowTaskStartedEventAttributes);
    // Microseconds: tasks run one at a time, so no two first tasks start in the same microsecond.
    return Number(started!.eventTime!.seconds) * 1e6 + Math.floor((started!.eventTime!.nanos ?? 0) / 1e3);
  };
  try {
    for (const t of threads) await client.thread(t.id).waitForIdle({ timeoutMs: 120_000 });
    const times = await Promise.all(threads.map(async (t) => ({ id: t.id, at: await firstStarted(t.id) })));
    return times.sort((a, b) => a.at - b.at).map((t) => t.id);
  } finally {
    await worker.shutdown();
    await running;
    await connection.close();
    await store.close();
  }
}

describe('a backlog on the task queue', () => {
  it('is served by priority key: a user thread queued last runs among the first', async () => {
    const background = Array.from({ length: 24 }, (_, i) => ({ id: uid(`bg${i}`), priority: { priorityKey: 4 } }));
    const user = { id: uid('user'), priority: { priorityKey: 2 } };
    const order = await drainOrder([...background, user]);
    expect(order.indexOf(user.id)).toBeLessThan(3);

    // The control: at the same key, the thread queued last waits behind the backlog.
    const same = { id: uid('user-same'), priority: { priorityKey: 4 } };
    const control = await drainOrder([...background.map((b) => ({ ...b, id: uid('bg-c') })), same]);
    console.log(
      `backlog of 24 at key 4: the thread queued last ran ${order.indexOf(user.id) + 1}st at key 2, ${control.indexOf(same.id) + 1}th at key 4`,
    );
    expect(control.indexOf(same.id)).toBeGreaterThan(15);
  }, 240_000);

  it("is shared between fairness keys: a tree queued behind another tree's flood is not starved", async () => {
    const flood = Array.from({ length: 24 }, () => ({
      id: uid('flood'),
      priority: { priorityKey: 4, fairnessKey: 'tree-flood' },
    }));
    const quiet = Array.from({ length: 4 }, () => ({
      id: uid('quiet'),
      priority: { priorityKey: 4, fairnessKey: 'tree-quiet' },
    }));
    const order = await drainOrder([...flood, ...quiet]);
    // Round robin between the two keys: the quiet tree's four run within the first ten, not after the 24.
    const positions = quiet.map((q) => order.indexOf(q.id));
    console.log(
      `24 tasks of one fairness key, then 4 of another: the four ran at ${positions.map((p) => p + 1).join(', ')}`,
    );
    expect(Math.max(...positions)).toBeLessThan(10);
  }, 240_000);
});
