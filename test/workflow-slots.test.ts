/**
 * Decision 74 on the real dev server: a burst of new threads, five times as many as a small workflow cache holds, each
 * first slice streaming for a while, on a worker with the default workflow task slots (half that cache). Every thread
 * must park with its first workflow task completed, none timed out, and every tool call dispatched once. With as many
 * slots as cache entries, Temporal's worker evicted threads whose slice was running: their workflow tasks timed out
 * and ran again (bench/probes/busy-eviction.ts measured 11 of 200 threads at a cache of 20). A worker asked for more
 * slots than half its cache is refused before it starts anything: its events endpoint, or startLocalSystem's dev server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { SimulatedModel } from '../src/model/simulated';
import { SqliteConversationStore } from '../src/store/sqlite';
import { defineTool } from '../src/tools/tool';
import { freePort } from '../src/devserver/server';
import { startLocalSystem } from '../src/local-system';
import { createAgentWorker } from '../src/worker/create-worker';
import { eventually, startTestSystem, type TestSystem, uid } from './helpers';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const CACHE = 8;
const THREADS = 40;

describe('workflow task slots against the workflow cache', () => {
  const dispatched = new Map<string, number>();
  let sys: TestSystem;

  beforeAll(async () => {
    const tool = defineTool({
      name: 'wait_for_ci',
      description: 'an external system that answers later',
      parameters: { type: 'object' },
      execute(_args, ctx) {
        dispatched.set(ctx.toolCallId, (dispatched.get(ctx.toolCallId) ?? 0) + 1);
      },
    });
    // ~150 ms per first slice: long enough for many other threads' tasks to pass while it runs.
    const model = new SimulatedModel({ toolName: 'wait_for_ci', chunkBytes: 120, chunkDelayMs: 15 });
    sys = await startTestSystem({ model, tools: [tool], maxCachedWorkflows: CACHE });
  });
  afterAll(() => sys?.shutdown());

  it('a burst of five caches of new threads: every first task completes, none times out, each call is dispatched once', async () => {
    const ids = Array.from({ length: THREADS }, () => uid('burst'));
    await Promise.all(ids.map((id, i) => sys.client.sendUserText(id, `Is build ${i} green?`, `${id}-u0`)));
    // Parked: the first task's status upsert (`waiting_tool`) is in history, so that task completed.
    const histories = await eventually(
      async () => {
        const all = await Promise.all(ids.map((id) => sys.temporal.workflow.getHandle(id).fetchHistory()));
        const parked = all.every((h) =>
          (h.events ?? []).some(
            (e) =>
              e.upsertWorkflowSearchAttributesEventAttributes !== undefined &&
              e.upsertWorkflowSearchAttributesEventAttributes !== null,
          ),
        );
        return parked ? all : undefined;
      },
      60_000,
      'every thread parked',
    );
    const timedOut = histories.map((h) => (h.events ?? []).filter((e) => e.workflowTaskTimedOutEventAttributes).length);
    expect(timedOut.reduce((a, b) => a + b, 0)).toBe(0);
    expect(dispatched.size).toBe(THREADS);
    expect([...dispatched.values()].every((n) => n === 1)).toBe(true);
  });

  it('refuses a worker asked for more slots than half its cache, before it starts anything', async () => {
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const store = new SqliteConversationStore(join(inject('scratchDir'), `${uid('slots')}.sqlite`));
    const port = await freePort();
    try {
      await expect(
        createAgentWorker({
          connection,
          taskQueue: uid('slots'),
          store,
          model: new SimulatedModel(),
          maxCachedWorkflows: CACHE,
          workerOptions: { maxConcurrentWorkflowTaskExecutions: CACHE },
          eventsEndpoint: { port },
        }),
      ).rejects.toThrow(/maxConcurrentWorkflowTaskExecutions \(8\) is more than half of maxCachedWorkflows \(8\)/);
      // Its events endpoint never listened: the port is free.
      await new Promise<void>((resolve, reject) => {
        const probe = createServer().once('error', reject);
        probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
      });
    } finally {
      await store.close();
      await connection.close();
    }
  });

  it('startLocalSystem refuses the same before it starts a dev server', async () => {
    const dataDir = join(inject('scratchDir'), uid('slots-local'));
    await expect(
      startLocalSystem({
        dataDir,
        model: new SimulatedModel(),
        workerOptions: { maxCachedWorkflows: 20, maxConcurrentWorkflowTaskExecutions: 11 },
        stopOnSignal: false,
      }),
    ).rejects.toThrow(/\(11\) is more than half of maxCachedWorkflows \(20\).*at least 22/);
    expect(existsSync(join(dataDir, 'temporal.sqlite'))).toBe(false);
  });
});
