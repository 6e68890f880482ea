/**
 * `npx tsx bench/probes/eager-start.ts [agents] [--rounds n]`: what eager workflow start saves when the starting client
 * shares the worker's process (one `NativeConnection` for both). One process runs the worker and the client against a
 * fresh dev server; each round starts `agents` bare workflows (park on a signal, nothing else) with a plain start and
 * then with `requestEagerStart`, 200 at a time, and waits until every one has run its first workflow task. Prints
 * agents/s, server and process CPU ms per agent, and how many starts the server did hand back eagerly.
 */
import { loadavg } from 'node:os';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer } from '../../src/devserver/server';
import type { BenchSinks } from '../baselines/workflows';
import { flag, positionals } from '../lib/args';
import { runMain } from '../lib/main';
import { cpuSeconds, treeCpu } from '../lib/proc';
import { median } from '../lib/stats';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const positional = positionals();
  const agents = Number(positional[0] ?? 1000);
  const rounds = Number(flag('--rounds') ?? 3);
  const server = await startDevServer({ ui: false });
  const connection = await NativeConnection.connect({ address: server.address });
  const parked = new Map<string, () => void>();
  const taskQueue = `eager-${Date.now()}`;
  const sinks: { bench: { parked: { fn(info: unknown, id: string): void; callDuringReplay: boolean } } } = {
    bench: {
      parked: {
        fn: (_info, id) => {
          parked.get(id)?.();
          parked.delete(id);
        },
        callDuringReplay: false,
      },
    },
  };
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: require.resolve('../baselines/workflows'),
    sinks: sinks as unknown as import('@temporalio/worker').InjectedSinks<BenchSinks>,
    maxCachedWorkflows: agents * 2 + 400,
    maxConcurrentWorkflowTaskExecutions: 100,
  });
  const client = new Client({ connection });
  const running = worker.run();
  const results: { mode: string; round: number; rate: number; server: number; process: number; eager: number }[] = [];
  try {
    const park = async (ids: string[], eager: boolean) => {
      let eagerly = 0;
      let next = 0;
      const one = async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          const done = new Promise<void>((resolve) => parked.set(id, resolve));
          const handle = await client.workflow.start('bareAgent', {
            workflowId: id,
            taskQueue,
            args: [id],
            requestEagerStart: eager,
          });
          if (handle.eagerlyStarted) eagerly++;
          await done;
        }
      };
      await Promise.all(Array.from({ length: 200 }, one));
      return eagerly;
    };
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ['plain', 'eager'] as const) {
        const tag = `${mode}-${round}`;
        await park(
          Array.from({ length: 100 }, (_, i) => `${tag}-warm-${i}`),
          mode === 'eager',
        );
        const cpu0 = { server: treeCpu(server.pid), process: cpuSeconds(process.pid) };
        const t0 = performance.now();
        const eager = await park(
          Array.from({ length: agents }, (_, i) => `${tag}-${i}`),
          mode === 'eager',
        );
        const seconds = (performance.now() - t0) / 1000;
        const r = {
          mode,
          round,
          rate: agents / seconds,
          server: ((treeCpu(server.pid) - cpu0.server) * 1000) / agents,
          process: ((cpuSeconds(process.pid) - cpu0.process) * 1000) / agents,
          eager,
        };
        results.push(r);
        console.log(
          `${mode} round ${round}: ${r.rate.toFixed(1)} agents/s; CPU ms per agent: server ${r.server.toFixed(2)}, ` +
            `worker+client ${r.process.toFixed(2)}; ${eager}/${agents} started eagerly (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
    }
    const ratios = (k: 'rate' | 'server' | 'process') =>
      median(
        Array.from({ length: rounds }, (_, i) => {
          const get = (m: string) => results.find((r) => r.mode === m && r.round === i + 1)![k];
          return get('eager') / get('plain');
        }),
      ).toFixed(2);
    console.log(
      `eager / plain (medians of the rounds' ratios): rate ${ratios('rate')}, server CPU ${ratios('server')}, ` +
        `worker+client CPU ${ratios('process')}`,
    );
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
  }
}

runMain(main);
