/**
 * One agent worker in a process of its own, for the cluster suite's many-workers test: several of these serve one
 * task queue against the same PostgreSQL conversation store, and the test SIGKILLs one of them mid-run.
 *
 * WORKER_ID names the worker: its Temporal identity is `worker-<id>`, so each workflow task's completion in a thread's
 * Temporal history says which process ran it. The model is `treeScript` (deterministic, decided from the request).
 * The first turn of a root thread whose id ends in `-slow` streams its parts SLOW_PART_MS apart (four parts: past the
 * 500 ms local-slice budget, so the slice is handed off to this process's own queue and adopted there). Tools:
 * `wait_for_ci` and `child_wait` start work that never finishes by itself (the test delivers their results), `watch`
 * answers at once with a subscription start.
 *
 * Prints `READY` once it polls, and `SLICE-ERROR <text>` for every failed slice attempt it sees (the test reports
 * them). On SIGTERM it shuts down gracefully (the SDK's runtime handles the signal) and exits.
 */
import type { ModelRequest } from '../../src/model/provider';
import { ScriptedModel, type ScriptedReply, type ScriptedTurn } from '../../src/model/scripted';
import { openConversationStore } from '../../src/store/open';
import { createAgentWorker } from '../../src/worker/create-worker';
import { treeScript, treeTools } from '../fixtures/tree-script';
import { workerMain } from '../fixtures/worker-main';

/** The thread a request is for (the system prompt names it). */
const threadOf = (req: ModelRequest) =>
  /Your current thread ID is `([^`]+)`\. The root thread ID is `([^`]+)`\./.exec(req.system);

workerMain(async (connection) => {
  const env = process.env;
  const slowPartMs = Number(env.SLOW_PART_MS ?? 0);
  const store = openConversationStore(env.STORE_URL!, { pool: { max: Number(env.PG_POOL_MAX ?? 20) } });
  const script = (req: ModelRequest): ScriptedReply => {
    // treeScript always answers with a turn (text and/or one tool call), never with raw parts.
    const reply = treeScript(req) as ScriptedTurn;
    const ids = threadOf(req);
    const firstRootTurn = ids !== null && ids[1] === ids[2] && req.messages.length === 1;
    return firstRootTurn && slowPartMs > 0 && ids[1]!.endsWith('-slow') ? { ...reply, delayMs: slowPartMs } : reply;
  };
  const worker = await createAgentWorker({
    connection,
    taskQueue: env.TASK_QUEUE!,
    store,
    model: new ScriptedModel(script),
    tools: treeTools(),
    workflowBundle: { codePath: env.BUNDLE_PATH! },
    maxCachedWorkflows: Number(env.MAX_CACHED_WORKFLOWS ?? 1000),
    onEvent(e) {
      if (e.type === 'info' && e.text.startsWith('Error'))
        console.log(`SLICE-ERROR ${e.threadId} ${e.text.replace(/\s+/g, ' ')}`);
    },
    workerOptions: {
      identity: `worker-${env.WORKER_ID!}`,
      // A killed worker's sticky queues are given up on after 5 s instead of 10 s: the others take its threads sooner.
      // (At 2 s, the survivors' own sticky tasks missed it by hundreds under this test's load, each one a replay.)
      stickyQueueScheduleToStartTimeout: '5s',
    },
  });
  return { worker, close: () => store.close() };
});
