/**
 * `npx tsx bench/probes/wedged-task.ts [threads] [seconds]`: what a thread whose workflow task can never succeed costs
 * (issue 38: "one wedged thread held the dev worker at 45 % CPU"). Two causes, each on `threads` threads of a fresh dev
 * server, sampled for `seconds`:
 * - `nondeterminism`: threads parked by this build, then served by a build whose workflow code changed without
 *   `patched()` (test/fixtures/nondeterministic-workflows.ts), woken by their tool results;
 * - `payload`: threads on release 0.11's frozen bundle flooded with 70 raw signals of 60 KB ids and then a text (the
 *   review's case): 0.11 carries every id and its continue-as-new exceeds the server's payload limit. This build
 *   sheds the ids (decision 83) and does not wedge; the row shows what 0.11 did.
 * It prints, per cause, the workflow task attempts reached, the failed attempts per minute per thread, and the CPU the
 * worker's process and the dev server spent per wedged thread (a fraction of one core).
 */
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { toolResult } from '../../src/tools/messages';
import { defineTool, type ToolContext } from '../../src/tools/tool';
import { createAgentWorker, type AgentWorker } from '../../src/worker/create-worker';
import { runMain } from '../lib/main';
import { cpuSeconds } from '../lib/proc';
import { probeBase } from '../lib/probe-base';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const threads = Number(process.argv[2] ?? 5);
  const seconds = Number(process.argv[3] ?? 90);
  const { server, storeFile, bundlePath } = await probeBase('wedged-task');
  const connection = await NativeConnection.connect({ address: server.address });
  const temporal = new Client({ connection });
  const store = new SqliteConversationStore(storeFile);
  const calls: ToolContext[] = [];
  const model = new ScriptedModel((r) =>
    JSON.stringify(r.messages.at(-1)).includes('wait') ? { toolCall: { name: 'wait', args: {} } } : { text: 'ok' },
  );
  const tools = [
    defineTool({
      name: 'wait',
      description: 'waits',
      parameters: { type: 'object' },
      execute: (_a, c) => void calls.push(c),
    }),
  ];
  const worker = async (taskQueue: string, bundle: { codePath: string } | { code: string }): Promise<AgentWorker> => {
    const w = await createAgentWorker({ connection, taskQueue, store, model, tools, workflowBundle: bundle });
    void w.run();
    return w;
  };
  const rows: string[] = [];
  const measure = async (cause: string, ids: string[]) => {
    const cpu0 = cpuSeconds(process.pid);
    const srv0 = cpuSeconds(server.pid);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const wall = (Date.now() - t0) / 1000;
    const attempts: number[] = [];
    for (const id of ids)
      attempts.push((await temporal.workflow.getHandle(id).describe()).raw.pendingWorkflowTask?.attempt ?? 0);
    const worker = (cpuSeconds(process.pid) - cpu0) / wall / ids.length;
    const srv = (cpuSeconds(server.pid) - srv0) / wall / ids.length;
    const median = [...attempts].sort((a, b) => a - b)[Math.floor(attempts.length / 2)]!;
    rows.push(
      `| ${cause} | ${ids.length} | ${median} | ${((median / wall) * 60).toFixed(1)} | ${(worker * 100).toFixed(2)} % | ${(srv * 100).toFixed(2)} % |`,
    );
  };
  try {
    // 1. Nondeterminism after a bad deploy.
    const q1 = `wedged-nd-${Date.now()}`;
    const good = await worker(q1, { codePath: bundlePath });
    const client = new AgentClient({ client: temporal, taskQueue: q1, store });
    const ids = Array.from({ length: threads }, (_, i) => `${q1}-${i}`);
    for (const id of ids) await client.sendUserText(id, 'please wait');
    for (const id of ids) await client.thread(id).waitForIdle({ timeoutMs: 60_000 });
    await good.shutdown();
    const bad = await worker(q1, {
      code: (
        await bundleWorkflowCode({
          workflowsPath: join(__dirname, '..', '..', 'test', 'fixtures', 'nondeterministic-workflows.ts'),
          logger: new DefaultLogger('ERROR'),
        })
      ).code,
    });
    for (const id of ids)
      await client.thread(id).deliver(
        toolResult(
          calls.find((c) => c.threadId === id)!,
          'done',
        ),
      );
    await measure('nondeterminism (bad deploy)', ids);
    await bad.shutdown();

    // 2. The review's payload case, on 0.11's code.
    const q2 = `wedged-payload-${Date.now()}`;
    const old = await worker(q2, {
      codePath: join(__dirname, '..', '..', 'test', 'fixtures', 'bundles', 'v0.11', 'workflows-bundle.js'),
    });
    const client2 = new AgentClient({ client: temporal, taskQueue: q2, store, threadOptions: { maxRunEvents: 40 } });
    const ids2 = Array.from({ length: threads }, (_, i) => `${q2}-${i}`);
    for (const id of ids2) {
      await client2.sendUserText(id, 'hello');
      await client2.thread(id).waitForIdle({ timeoutMs: 60_000 });
      const h = temporal.workflow.getHandle(id);
      for (let i = 0; i < 70; i++)
        await h.signal('input', {
          id: `${i}-${'k'.repeat(60_000)}`,
          threadId: id,
          content: { type: 'text', text: `t${i}` },
        });
      await client2.sendUserText(id, 'last');
    }
    await measure('payload too large (0.11)', ids2);
    await old.shutdown();
    console.log(`${threads} threads per cause, ${seconds} s each, ${new Date().toISOString()}`);
    console.log(
      '| cause | threads | attempts reached (median) | attempts per minute | worker CPU per thread | server CPU per thread |',
    );
    console.log('|---|--:|--:|--:|--:|--:|');
    for (const r of rows) console.log(r);
  } finally {
    await connection.close();
    await store.close();
    await server.stop();
  }
}

runMain(main);
