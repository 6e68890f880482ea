/**
 * Resource targets (decision 64) on the real dev server: a worker whose target is already exceeded holds its
 * workflow tasks, and so its slices, to Temporal's minimum of two at once, where the same worker without targets runs
 * them all together; bad targets are refused before any worker starts. Memory is the exceeded resource because a
 * machine always uses more than 1% of its memory, whereas its CPU can be idle.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { ModelStreamPart } from '../src/model/provider';
import { ScriptedModel, turnToParts } from '../src/model/scripted';
import { SqliteConversationStore } from '../src/store/sqlite';
import { createAgentWorker } from '../src/worker/create-worker';
import type { ResourceTargets } from '../src/worker/resource-targets';
import { withResourceTargets } from '../src/worker/resource-targets';
import { cliRunner, waitForLine } from './cli-process';
import { eventually, uid } from './helpers';

const THREADS = 8;

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });

/** Runs THREADS threads at once on a fresh worker; returns how many completions streamed at the same time at most. */
async function peakConcurrency(resourceTargets?: ResourceTargets): Promise<number> {
  let active = 0;
  let peak = 0;
  const model = new ScriptedModel(() =>
    (async function* (): AsyncGenerator<ModelStreamPart> {
      peak = Math.max(peak, ++active);
      try {
        await sleep(400);
        yield* turnToParts({ text: 'ok' });
      } finally {
        active--;
      }
    })(),
  );
  const taskQueue = `targets-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const store = new SqliteConversationStore(join(inject('scratchDir'), `targets-${randomUUID()}.sqlite`));
  const client = new AgentClient({ client: new Client({ connection }), taskQueue, store });
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    // Folded into the tuner: the slot sizes a caller asked for still hold.
    workerOptions: { maxConcurrentWorkflowTaskExecutions: 16, maxConcurrentLocalActivityExecutions: 50 },
    ...(resourceTargets && { resourceTargets }),
  });
  const running = worker.run();
  try {
    const ids = Array.from({ length: THREADS }, () => uid('targets'));
    await Promise.all(ids.map((id) => client.sendUserText(id, 'hello')));
    for (const id of ids) {
      const status = await client.thread(id).waitForIdle({ timeoutMs: 60_000 });
      expect(status.status).toBe('idle');
    }
    return peak;
  } finally {
    await worker.shutdown();
    await running;
    await connection.close();
    await store.close();
  }
}

describe('resource targets', () => {
  it('hold workflow tasks to the minimum while a target is exceeded, and every thread still answers', async () => {
    const free = await peakConcurrency();
    const held = await peakConcurrency({ cpu: 1, memory: 0.01 });
    console.log(
      `${THREADS} threads at once: ${free} completions together without targets, ${held} with memory over target`,
    );
    expect(free).toBeGreaterThan(2);
    expect(held).toBeLessThanOrEqual(2);
    expect(held).toBeGreaterThanOrEqual(1);
  }, 180_000);

  it('refuses targets outside (0, 1] and a tuner beside them, before a worker starts', () => {
    for (const bad of [{ cpu: 0 }, { cpu: 1.5 }, { cpu: Number.NaN }, { cpu: 0.7, memory: 2 }])
      expect(() => withResourceTargets(bad, 16)).toThrow(/fraction of the machine/);
    expect(() =>
      withResourceTargets({ cpu: 0.7 }, 16, {
        tuner: { tunerOptions: { targetCpuUsage: 0.5, targetMemoryUsage: 0.5 } },
      }),
    ).toThrow(/not both/);
    const folded = withResourceTargets({ cpu: 0.7 }, 16, {
      maxConcurrentWorkflowTaskExecutions: 4,
      maxConcurrentActivityTaskExecutions: 7,
      maxCachedWorkflows: 10,
    });
    expect(folded).not.toHaveProperty('maxConcurrentWorkflowTaskExecutions');
    expect(folded).not.toHaveProperty('maxConcurrentActivityTaskExecutions');
    expect(folded.maxCachedWorkflows).toBe(10);
    expect(folded.tuner).toMatchObject({
      workflowTaskSlotSupplier: {
        type: 'resource-based',
        minimumSlots: 2,
        maximumSlots: 4,
        tunerOptions: { targetCpuUsage: 0.7, targetMemoryUsage: 0.9 },
      },
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 7 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
    });
  });

  it('come from the worker command line: a worker with --cpu-target serves threads; bad flags are usage errors', async () => {
    const taskQueue = uid('targets-cli');
    const store = join(inject('scratchDir'), `${taskQueue}.sqlite`);
    const runner = cliRunner(
      () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store],
      {
        INFINITY_SIMULATED_DELAY_MS: '10',
      },
    );
    for (const [args, message] of [
      [['--cpu-target', '1.5'], '--cpu-target must be a fraction'],
      [['--cpu-target', 'most'], '--cpu-target must be a fraction'],
      [['--memory-target', '0.8'], '--memory-target needs --cpu-target'],
    ] as const) {
      const usage = await runner.run('worker', '--model', 'simulated', '--no-events', ...args);
      expect(usage, args.join(' ')).toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    }
    const port = await freePort();
    const worker = runner.start([
      'worker',
      '--model',
      'simulated',
      '--no-events',
      '--cpu-target',
      '70%',
      '--metrics-port',
      String(port),
    ]);
    let stderr = '';
    worker.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const metricsUrl = await waitForLine(worker, /^metrics (\S+)$/);
      expect(await waitForLine(worker, /^resource targets · (.*)$/)).toBe('cpu 0.7 · memory 0.9');
      // What the tuner measures is on the metrics endpoint, as Temporal names it: an operator can see it hold back.
      const usage = await eventually(async () => {
        const text = await (await fetch(metricsUrl)).text();
        return /^temporal_resource_slots_cpu_usage\{[^}]*\} ([\d.]+)$/m.exec(text)?.[1];
      }, 30_000);
      expect(Number(usage)).toBeGreaterThanOrEqual(0);
      expect(Number(usage)).toBeLessThanOrEqual(100);
      const threadId = uid('targets-cli-thread');
      expect((await runner.run('send', threadId, 'Is build 3 green?')).code).toBe(0);
      const tail = await runner.run('tail', threadId, '--until-idle');
      expect(tail.code).toBe(0);
      // The slice queue's worker polls no workflows by design; the SDK's warning about it is not shown.
      expect(stderr).not.toContain('No workflows registered');
    } finally {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('close', r));
    }
  }, 120_000);
});
