/**
 * Worker Versioning against the suite's dev server: two builds (A, B) of one Worker Deployment serve one task queue
 * side by side. Threads park on A while their tool runs, B becomes the current build (with the real `temporal` CLI,
 * as an operator does), then the results arrive. With AUTO_UPGRADE the threads finish on B, with PINNED on A: the
 * history names the build that completed each workflow task, and each build's model signs its answer, so the slice
 * ran there too. Every thread's committed history is exact. The CLI's `worker` takes its build from flags or the
 * environment.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeVersioningBehavior, type VersioningBehavior } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import { findTemporalCli } from '../../src/devserver/cli';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { toolResult } from '../../src/tools/messages';
import type { ToolContext } from '../../src/tools/tool';
import { type AgentWorker, createAgentWorker } from '../../src/worker/create-worker';
import { cliRunner, waitForLine } from '../cli-process';
import { eventually, recordingTool, render, uid } from '../helpers';

const run = promisify(execFile);
let connection: NativeConnection;
let store: SqliteConversationStore;

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  store = new SqliteConversationStore(join(inject('scratchDir'), `${uid('versioning')}.sqlite`));
});

afterAll(async () => {
  await connection?.close();
  await store?.close();
});

/** What an operator runs to switch builds. It fails until a worker of the build has polled; hence the retries. */
async function setCurrentVersion(deploymentName: string, buildId: string): Promise<void> {
  const args = [
    'worker',
    'deployment',
    'set-current-version',
    '--deployment-name',
    deploymentName,
    '--build-id',
    buildId,
  ];
  await eventually(
    () =>
      run(findTemporalCli({ install: false }), [...args, '--yes', '--address', inject('temporalAddress')]).then(
        () => true,
        () => false,
      ),
    30_000,
    `${deploymentName}.${buildId} to become current`,
  );
}

/** The build that completed each workflow task of the thread, by event id. */
async function buildsByTask(
  temporal: Client,
  threadId: string,
): Promise<{ eventId: number; buildId: string | undefined }[]> {
  const history = await temporal.workflow.getHandle(threadId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.workflowTaskCompletedEventAttributes)
    .map((e) => ({
      eventId: Number(e.eventId),
      buildId: e.workflowTaskCompletedEventAttributes!.deploymentVersion?.buildId ?? undefined,
    }));
}

describe.each<{ behavior: VersioningBehavior; finishesOn: 'A' | 'B' }>([
  { behavior: 'AUTO_UPGRADE', finishesOn: 'B' },
  { behavior: 'PINNED', finishesOn: 'A' },
])('Worker Versioning with $behavior', ({ behavior, finishesOn }) => {
  const deploymentName = uid('agents');
  const taskQueue = uid('versioning');
  const calls: ToolContext[] = [];
  const workers: AgentWorker[] = [];
  let client: AgentClient;
  let temporal: Client;

  const build = (buildId: 'A' | 'B', maxCachedWorkflows?: number) =>
    createAgentWorker({
      connection,
      taskQueue,
      store,
      // Each build signs its answer, so the history says which build's slice answered.
      model: new ScriptedModel((req) => {
        const last = req.messages[req.messages.length - 1]!;
        return last.role === 'tool_result'
          ? { text: `finished on build ${buildId}` }
          : { toolCall: { name: 'wait_for_ci', args: {} } };
      }),
      tools: [recordingTool('wait_for_ci', calls)],
      workflowBundle: { codePath: inject('workflowBundlePath') },
      deployment: { name: deploymentName, buildId, defaultVersioningBehavior: behavior },
      ...(maxCachedWorkflows !== undefined && { maxCachedWorkflows }),
    });

  beforeAll(async () => {
    // A caches no thread, as when a thread has waited long enough to be evicted: a cached thread's next task goes to
    // A's sticky queue, which hears of a new current build some 100 ms after the switch (that one task then runs on A,
    // the next on B). Waiting threads are what this is about.
    workers.push(await build('A', 0), await build('B'));
    for (const w of workers) void w.run();
    temporal = new Client({ connection });
    client = new AgentClient({ client: temporal, taskQueue, store });
    await setCurrentVersion(deploymentName, 'A');
  });

  afterAll(async () => {
    for (const w of workers) await w.shutdown();
  });

  it(`parks threads on A, makes B current, and finishes them on ${finishesOn}`, async () => {
    const threads = [client.thread(uid('parked')), client.thread(uid('parked'))];
    for (const t of threads) await t.sendUserText('Is CI green?');
    await eventually(() => calls.length === threads.length, 30_000, 'both tool calls');
    const parkedAt = new Map<string, number>();
    for (const t of threads) {
      expect(await t.waitForIdle()).toMatchObject({ status: 'waiting_tool', pendingCall: { name: 'wait_for_ci' } });
      const tasks = await buildsByTask(temporal, t.threadId);
      expect(tasks.map((x) => x.buildId)).toEqual(tasks.map(() => 'A'));
      parkedAt.set(t.threadId, tasks[tasks.length - 1]!.eventId);
    }

    await setCurrentVersion(deploymentName, 'B');
    for (const ctx of calls) await client.deliver(toolResult(ctx, 'CI green'));

    for (const t of threads) {
      expect(await t.waitForIdle({ settled: true })).toMatchObject({ status: 'idle', pendingCall: null });
      expect(render(await t.history())).toEqual([
        'user: Is CI green?',
        'call #1 wait_for_ci {}',
        'result #1: CI green',
        `assistant: finished on build ${finishesOn}`,
      ]);
      const after = (await buildsByTask(temporal, t.threadId)).filter((x) => x.eventId > parkedAt.get(t.threadId)!);
      expect(after.length).toBeGreaterThan(0);
      expect(after.map((x) => x.buildId)).toEqual(after.map(() => finishesOn));
      const { versioningInfo } = (await t.workflow.describe()).raw.workflowExecutionInfo ?? {};
      expect(versioningInfo?.deploymentVersion).toMatchObject({ deploymentName, buildId: finishesOn });
      expect(decodeVersioningBehavior(versioningInfo?.behavior)).toBe(behavior);
    }
  });
});

describe('the CLI worker', () => {
  it('serves its build of a deployment, named by flags or the environment', async () => {
    const deploymentName = uid('cli-agents');
    const taskQueue = uid('cli-versioning');
    const storePath = join(inject('scratchDir'), `${taskQueue}.sqlite`);
    const runner = cliRunner(
      () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', storePath],
      {},
    );
    const usage = await runner.run('worker', '--build-id', 'C');
    expect(usage).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('needs both --deployment-name and --build-id'),
    });

    const worker = runner.start(['worker', '--model', 'simulated', '--no-events', '--build-id', 'C'], {
      INFINITY_DEPLOYMENT_NAME: deploymentName,
    });
    try {
      expect(await waitForLine(worker, /^(deployment .*)$/)).toBe(
        `deployment ${deploymentName} · build C · AUTO_UPGRADE`,
      );
      await setCurrentVersion(deploymentName, 'C');
      const temporal = new Client({ connection });
      const thread = await new AgentClient({ client: temporal, taskQueue }).startThread({
        threadId: uid('cli-thread'),
      });
      expect(await thread.waitForIdle()).toMatchObject({ status: 'idle' });
      const tasks = await buildsByTask(temporal, thread.threadId);
      expect(tasks.length).toBeGreaterThan(0);
      expect(tasks.map((t) => t.buildId)).toEqual(tasks.map(() => 'C'));
    } finally {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('close', r));
    }
  });
});
