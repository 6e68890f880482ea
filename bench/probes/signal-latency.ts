/**
 * `npx tsx bench/probes/signal-latency.ts [dynamic-config-json]`: one agent on an otherwise idle dev server; times a
 * signal to the start of the activity it unblocks, 60 times (the benchmark's `v01Agent`, whose completions are regular
 * activities, in-process worker).
 * Without an argument the dev server runs with our default dynamic config; e.g.
 * '{"history.transferProcessorMaxPollRPS":20}' puts back the server's default queue read rate.
 */
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer } from '../../src/devserver/server';
import { resultSignal, userSignal } from '../baselines/workflows';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

const now = () => performance.timeOrigin + performance.now();

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = await startDevServer({ ui: false, dynamicConfig: JSON.parse(process.argv[2] ?? '{}') });
  try {
    const started = new Map<string, (t: number) => void>();
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: server.address }),
      taskQueue: 'probe',
      workflowsPath: join(__dirname, '..', 'baselines', 'workflows.ts'),
      activities: {
        async emptyCompletion({ threadId }: { threadId: string }) {
          started.get(threadId)?.(now());
        },
      },
    });
    const running = worker.run();
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const id = 'probe-agent';
    const turns = 30;
    const next = () => new Promise<number>((r) => started.set(id, r));
    const latencies: number[] = [];
    const timed = async (send: () => Promise<void>) => {
      const start = next();
      const t0 = now();
      await send();
      latencies.push((await start) - t0);
    };
    const first = next();
    await client.workflow.signalWithStart('v01Agent', {
      workflowId: id,
      taskQueue: 'probe',
      args: [id, turns],
      signal: userSignal,
      signalArgs: ['go'],
    });
    await first;
    for (let t = 0; t < turns; t++) {
      if (t > 0) await timed(() => client.workflow.getHandle(id).signal(userSignal, 'go'));
      await new Promise((r) => setTimeout(r, 20));
      await timed(() => client.workflow.getHandle(id).signal(resultSignal, 'result'));
    }
    const f = (n: number) => n.toFixed(1);
    console.log(
      `signal → activity start over ${latencies.length}: p50 ${f(percentile(latencies, 50))} ms, p90 ${f(percentile(latencies, 90))} ms, min ${f(Math.min(...latencies))} ms`,
    );
    worker.shutdown();
    await running;
  } finally {
    await server.stop();
  }
}

runMain(main);
