/**
 * `npx tsx bench/probes/interrupt-latency.ts [samples] [budgetMs]`: how long a user text takes to interrupt a streaming
 * slice — from `sendUserText` returning to the interrupted slice's commit (its `completion_finished` event) — with the
 * text sent at a random moment 0.1–3 s into a 10 s stream. `budgetMs` is the threads' `localSliceBudgetMs` (default
 * 500; 0 runs every slice as a regular activity, release 0.2's way). Prints p50/p90/max.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import { startDevServer } from '../../src/devserver/server';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { createAgentWorker } from '../../src/worker/create-worker';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const samples = Number(process.argv[2] ?? 20);
  const budget = Number(process.argv[3] ?? 500);
  const work = mkdtempSync(join(tmpdir(), 'infinity-interrupt-'));
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const store = new SqliteConversationStore(join(work, 'store.sqlite'));
  const finished = new Map<string, () => void>();
  const model = new ScriptedModel((req) => {
    const last = req.messages.at(-1)!;
    return last.role === 'user' && last.text === 'write'
      ? { text: 'word '.repeat(200), chunks: 200, delayMs: 50 }
      : { text: 'ok' };
  });
  const taskQueue = 'interrupt-probe';
  const worker = await createAgentWorker({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue,
    store,
    model,
    onEvent: (e) => {
      if (e.type === 'completion_finished') finished.get(e.threadId)?.();
    },
  });
  const running = worker.run();
  const client = new AgentClient({
    client: new Client({ connection: await Connection.connect({ address: server.address }) }),
    taskQueue,
    threadOptions: { localSliceBudgetMs: budget },
  });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const thread = await client.startThread({ threadId: `probe-${budget}-${i}-${Date.now()}` });
      await thread.sendUserText('write');
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 2900));
      const done = new Promise<void>((r) => finished.set(thread.threadId, r));
      await thread.sendUserText('stop');
      const t0 = performance.now();
      await done;
      latencies.push(performance.now() - t0);
      await thread.waitForIdle({ settled: true });
    }
    const f = (p: number) => percentile(latencies, p).toFixed(0);
    console.log(
      `budget ${budget} ms, ${samples} samples: user text → interrupted slice committed p50 ${f(50)} ms, p90 ${f(90)} ms, max ${f(100)} ms`,
    );
  } finally {
    await worker.shutdown();
    await running;
    await server.stop();
  }
}

runMain(main);
