/** Child of worker-rss.ts: one idle worker of the given kind; prints its RSS breakdown when asked (SIGUSR2). */
import { readFileSync } from 'node:fs';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { SimulatedModel } from '../../src/model/simulated';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { createAgentWorker } from '../../src/worker/create-worker';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const env = process.env;
  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS! });
  const kind = env.KIND ?? 'agent';
  let worker: { run(): Promise<void>; shutdown(): unknown };
  if (kind === 'agent') {
    worker = await createAgentWorker({
      connection,
      taskQueue: `rss-${process.pid}`,
      store: new SqliteConversationStore(env.STORE_PATH!),
      model: new SimulatedModel({ toolName: 'bench_tool' }),
      workflowBundle: { codePath: env.BUNDLE_PATH! },
      ...(env.MAX_CACHED && { maxCachedWorkflows: Number(env.MAX_CACHED) }),
    });
  } else {
    worker = await Worker.create({
      connection,
      taskQueue: `rss-${process.pid}`,
      workflowBundle: { codePath: env.BUNDLE_PATH! },
      activities: {},
    });
  }
  const running = worker.run();
  process.on('message', () => {
    (globalThis as { gc?: () => void }).gc?.();
    const status = readFileSync('/proc/self/status', 'utf8');
    const field = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
    const m = process.memoryUsage();
    process.send?.({
      rssMiB: field('VmRSS'),
      anonMiB: field('RssAnon'),
      fileMiB: field('RssFile'),
      heapUsedMiB: m.heapUsed / 2 ** 20,
      heapTotalMiB: m.heapTotal / 2 ** 20,
      externalMiB: m.external / 2 ** 20,
      threads: field('Threads') * 1024,
    });
  });
  process.on('SIGTERM', () => process.exit(0));
  process.send?.('ready');
  await running;
}
void main();
