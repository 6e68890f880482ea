/**
 * One benchmark worker in its own process, so its memory is measured on its own. `DESIGN` selects ours or a baseline
 * (`v01`, `ceiling`, `bare`, `blocking`): a baseline's worker registers every baseline workflow and the activities, which
 * `ceilingAgent` runs as local activities and the others as regular ones. It reports tool dispatches, completion
 * starts and turn ends to the driver over IPC; the driver plays the external systems that answer tools. `STORE` is
 * ours' conversation store, a SQLite file or a `postgres://` URL; several such processes may share one task queue.
 */
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, type InjectedSinks, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { AgentClient } from '../src/client/agent-client';
import type { ThreadOptions } from '../src/workflows/contract';
import { SimulatedModel } from '../src/model/simulated';
import { openConversationStore } from '../src/store/open';
import { PostgresConversationStore } from '../src/store/postgres';
import { defineTool } from '../src/tools/tool';
import { createAgentWorker } from '../src/worker/create-worker';
import { maxWorkflowSlotsFor } from '../src/worker/workflow-slots';
import type { BaselineActivities, BenchSinks } from './baselines/workflows';
import { benchAgents } from './lib/bench-agents';
import { type BareStart, type Design, startBareAgent } from './lib/fleet';
import { runMain } from './lib/main';
import type { DriverToWorker, WorkerToDriver } from './lib/worker-messages';

const now = () => performance.timeOrigin + performance.now();
// One IPC write per turn of the event loop, not per message: each write wakes the driver, and on two cores that
// scheduling is CPU the measured process pays. Timestamps are taken when the event happens, so batching does not
// move them.
let outbox: WorkerToDriver[] = [];
const send = (m: WorkerToDriver) => {
  if (outbox.push(m) === 1) {
    setImmediate(() => {
      process.send?.(outbox);
      outbox = [];
    });
  }
};

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const env = process.env;
  const design = env.DESIGN as Design;
  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS! });
  const maxCached = Number(env.MAX_CACHED ?? 100);
  const model = new SimulatedModel({ toolName: 'bench_tool', completionBytes: 1200, chunkBytes: 60 });
  const waiting = new Map<string, (result: string) => void>();
  // `START_IN_WORKER`: the driver asks this process to start its agents, with a client on the worker's connection.
  let startHere: ((id: string, text: string, msgId: string) => Promise<unknown>) | undefined;
  process.on('message', (m: DriverToWorker) => {
    if (m.k === 'send') {
      startHere!(m.id, m.text, m.msgId).then(
        () => send({ k: 'sent', id: m.id }),
        (e: unknown) => send({ k: 'sent', id: m.id, error: e instanceof Error ? e.message : String(e) }),
      );
    } else if (m.k === 'gc') {
      (globalThis as { gc?: () => void }).gc?.();
      send({ k: 'gc-done' });
    } else if (m.k === 'result') {
      waiting.get(m.id)?.(`result of ${m.call}`);
      waiting.delete(m.id);
    }
  });

  let worker: { run(): Promise<void>; shutdown(): Promise<void> | void };
  let close = async () => {};
  if (design === 'ours') {
    const store = openConversationStore(
      env.STORE!,
      env.ITEM_CACHE_BYTES ? { itemCacheBytes: Number(env.ITEM_CACHE_BYTES) } : {},
    );
    // As the CLI's worker does: a database's schema migrates before the first slice (under an advisory lock, so
    // worker processes starting together do not race).
    if (store instanceof PostgresConversationStore) await store.migrate();
    close = () => store.close();
    const tool = defineTool({
      name: 'bench_tool',
      description: 'an external system that answers later',
      parameters: { type: 'object' },
      execute(_args, ctx) {
        send({ k: 'tool', id: ctx.threadId, call: ctx.toolCallId });
      },
    });
    // `AGENTS`: the worker hosts the benchmark's two agents (issue 40) instead of defining its own `default`.
    const own = env.AGENTS
      ? { agents: benchAgents(model, (ctx) => send({ k: 'tool', id: ctx.threadId, call: ctx.toolCallId })) }
      : { model, tools: [tool] };
    const agent = await createAgentWorker({
      connection,
      taskQueue: env.TASK_QUEUE!,
      store,
      ...own,
      maxCachedWorkflows: maxCached,
      workflowBundle: env.BUNDLE_PATH ? { codePath: env.BUNDLE_PATH } : undefined,
      workerOptions: {
        maxConcurrentActivityTaskExecutions: 200,
        // 100 like the baselines' workers, for the waves' comparison, but at most half the cache, as the runtime
        // requires (decision 74); the priorities phase runs the runtime's default.
        maxConcurrentWorkflowTaskExecutions: Math.min(
          Number(env.WORKFLOW_SLOTS ?? 100),
          maxWorkflowSlotsFor(maxCached),
        ),
      },
      ...(env.CPU_TARGET && { resourceTargets: { cpu: Number(env.CPU_TARGET) } }),
      onEvent(e) {
        if (e.type === 'completion_started') send({ k: 'start', id: e.threadId, at: now() });
        else if (e.type === 'status' && e.status === 'idle') send({ k: 'end', id: e.threadId, at: now() });
      },
    });
    worker = agent;
    if (env.START_IN_WORKER) {
      const client = new AgentClient({
        client: new Client({ connection }),
        taskQueue: env.TASK_QUEUE!,
        store,
        eagerStart: true,
        ...(env.THREAD_OPTIONS && { threadOptions: JSON.parse(env.THREAD_OPTIONS) as ThreadOptions }),
      });
      startHere = (id, text, msgId) => client.sendUserText(id, text, msgId);
    }
  } else {
    const slots = Number(env.ACTIVITY_SLOTS ?? 200);
    const drain = async (threadId: string, transcriptBytes: number) => {
      let text = '';
      for await (const p of model.stream(
        { threadId, system: '', tools: [], messages: [{ role: 'user', text: `x${transcriptBytes}` }] },
        new AbortController().signal,
      )) {
        if (p.type === 'text-delta') text += p.text;
      }
      return text;
    };
    const activities: BaselineActivities = {
      async emptyCompletion({ threadId, phase }) {
        send({ k: 'start', id: threadId, at: now() });
        if (phase === 'call') send({ k: 'tool', id: threadId, call: `${threadId}-${now()}` });
        else send({ k: 'end', id: threadId, at: now() });
      },
      async blockingCompletion({ threadId, phase, transcript }) {
        send({ k: 'start', id: threadId, at: now() });
        const text = await drain(threadId, transcript.join('').length);
        if (phase === 'end') send({ k: 'end', id: threadId, at: now() });
        return text;
      },
      blockingTool({ threadId, turn }) {
        return new Promise<string>((resolve) => {
          waiting.set(threadId, resolve);
          send({ k: 'tool', id: threadId, call: `${threadId}-${turn}` });
        });
      },
    };
    worker = await Worker.create({
      connection,
      taskQueue: env.TASK_QUEUE!,
      workflowsPath: join(__dirname, 'baselines', 'workflows.ts'),
      activities,
      maxCachedWorkflows: maxCached,
      maxConcurrentActivityTaskExecutions: slots,
      maxConcurrentWorkflowTaskExecutions: Math.min(100, maxCached),
      // `bareAgent` without an activity says it parked through this sink (not called on replay).
      sinks: {
        bench: { parked: { fn: (_info, threadId) => send({ k: 'tool', id: threadId, call: `${threadId}-parked` }) } },
      } satisfies InjectedSinks<BenchSinks>,
    });
  }
  if (env.START_IN_WORKER && design === 'bare') {
    // Bare agents with the parts of ours' start the variant turns on (none: the floor eager start reaches), eagerly.
    const client = new Client({ connection });
    const bare = env.BARE_START ? (JSON.parse(env.BARE_START) as BareStart) : {};
    startHere = (id, text) => startBareAgent(client, env.TASK_QUEUE!, bare, id, text, true);
  }
  const running = worker.run();
  send({ k: 'ready' });
  // Not awaited here: `await running` below sees the worker stop, and its failure if it fails.
  process.on('SIGTERM', () => void worker.shutdown());
  await running;
  await close();
  await connection.close();
}

runMain(main);
