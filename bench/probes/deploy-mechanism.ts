/**
 * `npx tsx bench/probes/deploy-mechanism.ts [threads=1000] [modes=pinned,patched]`: what moving parked threads onto a
 * new release costs under each candidate mechanism (issue 39 §3), on a fresh dev server:
 * - `pinned`: two builds of one Worker Deployment, threads pinned to the build that started them; the new build
 *   becomes current, and a sweep wakes every parked thread (a signal), whose run on the old build sees
 *   `targetWorkerDeploymentVersionChanged` and continues as new onto the new build. Needed at every deploy.
 * - `patched`: today's rules, one unversioned build; a deploy costs parked threads nothing (the new code replays their
 *   history when they wake), and a sweep (`migrate`) continues every parked thread as new once per window, so the
 *   patches of releases that left the window can retire.
 * Each sweep hands every thread one input, so each new run takes one slice (a local activity); a thread is moved once
 * that slice ran on the new code. Prints, per mode: parked threads, sweep time and rate, history events per moved
 * thread (the old run's tail and the new run), and the CPU the dev server and this process (both workers) spent.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { runScratch } from '../../infra/scratch';
import { findTemporalCli } from '../../src/devserver/cli';
import { startDevServer } from '../../src/devserver/server';
import { runMain } from '../lib/main';
import { cpuSeconds } from '../lib/proc';

const run = promisify(execFile);

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function waitFor(what: string, test: () => boolean, timeoutMs = 900_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let shown = Date.now();
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    if (Date.now() - shown > 10_000) {
      console.error(`waiting: ${what}`);
      shown = Date.now();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const threads = Number(process.argv[2] ?? 1000);
  const modes = (process.argv[3] ?? 'pinned,patched').split(',') as ('pinned' | 'patched')[];
  const work = runScratch('infinity-deploy-mechanism-').dir;
  const server = await startDevServer({
    ui: false,
    dbFilename: join(work, 'temporal.sqlite'),
    ...(process.env.PROBE_DC && { dynamicConfig: { [process.env.PROBE_DC]: true } }),
  });
  const cli = findTemporalCli({ install: false });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./deploy-mechanism/workflow'),
    logger: new DefaultLogger('ERROR'),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  const rows: string[] = [];
  try {
    for (const mode of modes) {
      const taskQueue = `deploy-${mode}-${Date.now()}`;
      const deploymentName = `probe-${mode}-${Date.now()}`;
      const arrived = new Map<string, number>();
      const worker = async (buildId: string) => {
        const w = await Worker.create({
          connection,
          taskQueue,
          workflowBundle: bundle,
          maxCachedWorkflows: 200,
          activities: {
            slice: async (n: number) => {
              arrived.set(buildId, (arrived.get(buildId) ?? 0) + 1);
              return n + 1;
            },
          },
          ...(mode === 'pinned' && {
            workerDeploymentOptions: {
              useWorkerVersioning: true,
              version: { deploymentName, buildId },
              defaultVersioningBehavior: 'PINNED' as const,
            },
          }),
        });
        const running = w.run();
        return { w, running };
      };
      const setCurrent = async (buildId: string) => {
        const args = ['worker', 'deployment', 'set-current-version', '--deployment-name', deploymentName];
        for (let i = 0; ; i++) {
          try {
            await run(cli, [...args, '--build-id', buildId, '--yes', '--address', server.address]);
            return;
          } catch (e) {
            if (i > 100) throw e;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      };

      const old = await worker('v1');
      if (mode === 'pinned') await setCurrent('v1');
      const ids = Array.from({ length: threads }, (_, i) => `${taskQueue}-${i}`);
      const parkStart = Date.now();
      await pool(ids, 50, (id) =>
        client.workflow.signalWithStart('parkedThread', {
          workflowId: id,
          taskQueue,
          args: [{ mode }],
          signal: 'wake',
          signalArgs: [],
        }),
      );
      await waitFor('parked', () => (arrived.get('v1') ?? 0) >= threads);
      const parkMs = Date.now() - parkStart;
      const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(threads / 10)) === 0);
      const eventsBefore = new Map<string, number>();
      for (const id of sample)
        eventsBefore.set(id, (await client.workflow.getHandle(id).fetchHistory()).events?.length ?? 0);

      // The deploy: a new build. Pinned: it becomes current, and the old one keeps serving its threads until moved.
      let next: Awaited<ReturnType<typeof worker>>;
      if (mode === 'pinned') {
        next = await worker('v2');
        await setCurrent('v2');
      } else {
        old.w.shutdown();
        await old.running;
        next = await worker('v2');
      }
      const cpu0 = cpuSeconds(process.pid);
      const srv0 = cpuSeconds(server.pid);
      const t0 = Date.now();
      // The sweep: `migrate` continues each parked run as new at once (pinned: onto the current build, asking
      // AUTO_UPGRADE for the new run's first task, since the dev server never sets targetWorkerDeploymentVersionChanged),
      // then a wake gives each new run one slice, on v2.
      await pool(ids, 50, (id) =>
        client.workflow.getHandle(id).signal(process.env.PROBE_WAKE_ONLY ? 'wake' : 'migrate'),
      );
      const sentMs = Date.now() - t0;
      if (!process.env.PROBE_WAKE_ONLY) await pool(ids, 50, (id) => client.workflow.getHandle(id).signal('wake'));
      if (process.env.PROBE_DEBUG) {
        await new Promise((r) => setTimeout(r, 5000));
        const h = await client.workflow.getHandle(ids[0]!).fetchHistory();
        for (const e of h.events ?? [])
          console.error(
            e.eventId,
            e.eventType,
            JSON.stringify(e.workflowTaskStartedEventAttributes ?? e.workflowTaskCompletedEventAttributes ?? {}).slice(
              0,
              300,
            ),
          );
        console.error(
          JSON.stringify((await client.workflow.getHandle(ids[0]!).describe()).raw.workflowExtendedInfo ?? {}).slice(
            0,
            500,
          ),
          JSON.stringify(
            (await client.workflow.getHandle(ids[0]!).describe()).raw.workflowExecutionInfo?.versioningInfo ?? {},
          ),
        );
      }
      await waitFor('moved', () => (arrived.get('v2') ?? 0) >= threads);
      const sweepMs = Date.now() - t0;
      const cpu = cpuSeconds(process.pid) - cpu0;
      const srv = cpuSeconds(server.pid) - srv0;
      let oldTail = 0;
      let fresh = 0;
      for (const id of sample) {
        const latest = await client.workflow.getHandle(id).fetchHistory();
        const prevRun = latest.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
        const previous = await client.workflow.getHandle(id, prevRun ?? undefined).fetchHistory();
        oldTail += (previous.events?.length ?? 0) - eventsBefore.get(id)!;
        fresh += latest.events?.length ?? 0;
      }
      rows.push(
        `| ${mode} | ${threads} | ${(parkMs / 1000).toFixed(1)} | ${(sweepMs / 1000).toFixed(1)} (signals ${(sentMs / 1000).toFixed(1)}) | ${((threads / sweepMs) * 1000).toFixed(0)} | ${(oldTail / sample.length).toFixed(1)} + ${(fresh / sample.length).toFixed(1)} | ${((srv * 1000) / threads).toFixed(2)} | ${((cpu * 1000) / threads).toFixed(2)} |`,
      );
      if (mode === 'pinned') {
        // Rollback: the old build current again. A moved thread stays pinned to the new build.
        await setCurrent('v1');
        const before = arrived.get('v2') ?? 0;
        await client.workflow.getHandle(ids[0]!).signal('wake');
        await waitFor('a moved thread answers after the rollback', () => (arrived.get('v2') ?? 0) > before, 30_000);
        rows.push(`| | rollback | moved threads stay on v2 after v1 is current again: yes | | | | | |`);
        old.w.shutdown();
        await old.running;
      }
      next.w.shutdown();
      await next.running;
    }
    console.log(`${new Date().toISOString()} · dev server ${server.address}`);
    console.log(
      '| mode | threads | park s | sweep s | threads/s | events per thread (old run tail + new run) | server CPU ms per thread | workers CPU ms per thread |',
    );
    console.log('|---|--:|--:|--:|--:|--:|--:|--:|');
    for (const r of rows) console.log(r);
  } finally {
    await connection.close();
    await server.stop();
  }
}

runMain(main);
