/**
 * A deploy that goes wrong, for real, against the suite's dev server. A build whose workflow code changed without
 * `patched()` (test/fixtures/nondeterministic-workflows.ts) replaces the current one:
 * - a thread parked by the good build fails on replay as its tool result arrives: `status()` says `failed` and why,
 *   the CLI's `threads --stuck` and `status` (real processes) show it, and once the good build is back the thread
 *   recovers by itself and answers new input, its history exact;
 * - a thread the bad build started has the bad build's commands in its history, so the good build cannot replay it
 *   either: the reset docs/upgrading.md documents (to the first task the bad build completed) brings it back.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { ThreadHandle } from '../src/client/thread-handle';
import { stuckByDescribing } from '../src/client/stuck';
import type { ThreadStatus } from '../src/core/types';
import { findTemporalCli } from '../src/devserver/cli';
import { ScriptedModel } from '../src/model/scripted';
import { SqliteConversationStore } from '../src/store/sqlite';
import { toolResult } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { type AgentWorker, createAgentWorker } from '../src/worker/create-worker';
import { cliRunner, jsonLines } from './cli-process';
import { eventually, recordingTool, render, uid } from './helpers';

const taskQueue = uid('stuck');
const storePath = join(inject('scratchDir'), `${taskQueue}.sqlite`);
const cli = cliRunner(
  () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', storePath],
  {},
).run;
const calls: ToolContext[] = [];
let connection: NativeConnection;
let store: SqliteConversationStore;
let temporal: Client;
let client: AgentClient;
let badBundle: string;
const running: AgentWorker[] = [];

const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'tool_result') return { text: 'CI is green.' };
  if (last.role === 'user' && last.text === 'Is CI green?') return { toolCall: { name: 'wait_for_ci', args: {} } };
  return { text: 'Nothing else.' };
});

async function startWorker(bundle: { codePath: string } | { code: string }): Promise<AgentWorker> {
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model,
    tools: [recordingTool('wait_for_ci', calls)],
    workflowBundle: bundle,
  });
  void worker.run();
  running.push(worker);
  return worker;
}

async function stop(worker: AgentWorker): Promise<void> {
  await worker.shutdown();
  running.splice(running.indexOf(worker), 1);
}

const goodBundle = () => ({ codePath: inject('workflowBundlePath') });
const listedStuck = async () => {
  const ids: string[] = [];
  for await (const t of client.listThreads({ stuck: true })) ids.push(t.threadId);
  return ids;
};

/** The thread's status once its workflow task has failed (the attribute is set at the first failure). */
async function failedStatus(thread: ThreadHandle): Promise<ThreadStatus> {
  await eventually(
    async () => (await listedStuck()).includes(thread.threadId),
    30_000,
    `${thread.threadId} listed as stuck`,
  );
  return thread.status();
}

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  store = new SqliteConversationStore(storePath);
  temporal = new Client({ connection });
  client = new AgentClient({ client: temporal, taskQueue, store });
  const bundled = await bundleWorkflowCode({
    workflowsPath: join(__dirname, 'fixtures', 'nondeterministic-workflows.ts'),
    logger: new DefaultLogger('WARN'),
  });
  badBundle = bundled.code;
});

afterAll(async () => {
  for (const w of [...running]) await stop(w);
  await connection?.close();
  await store?.close();
});

it('reports a thread failing after a bad deploy, lists it as stuck, and recovers it once the fix is deployed', async () => {
  const good = await startWorker(goodBundle());
  const parked = client.thread(uid('parked'));
  await parked.sendUserText('Is CI green?');
  expect(await parked.waitForIdle()).toMatchObject({ status: 'waiting_tool', pendingCall: { name: 'wait_for_ci' } });
  await stop(good);

  // The bad deploy: a fresh worker replays the thread from its history when the tool result arrives, and fails.
  const bad = await startWorker({ code: badBundle });
  await client.deliver(toolResult(calls[0]!, 'all checks passed'));
  const failed = await failedStatus(parked);
  expect(failed).toMatchObject({
    threadId: parked.threadId,
    kind: 'root',
    status: 'failed',
    pendingCall: null,
    historyLength: 2,
  });
  expect(failed.lastError).toMatch(
    /^workflow task keeps failing \(attempt \d+\): NON_DETERMINISTIC_ERROR: \[TMPRL1100\] Nondeterminism error/,
  );

  // Both ways of finding it: the reported-problems attribute, and describing running threads (older servers).
  const described = [];
  for await (const s of stuckByDescribing(temporal, [`TaskQueue = '${taskQueue}'`])) described.push(s);
  expect(described.map((s) => [s.wf.workflowId, s.problems])).toEqual([
    [parked.threadId, ['category=WorkflowTaskFailed', 'cause=WorkflowTaskFailedCauseNonDeterministicError']],
  ]);
  const listed = await cli('threads', '--stuck', '--json');
  expect(listed.code).toBe(0);
  expect(jsonLines(listed.stdout)).toEqual([
    {
      threadId: parked.threadId,
      running: true,
      kind: 'root',
      // The client found AgentName registered on the suite's dev server: a thread that names none is `default`.
      agent: 'default',
      status: 'failed',
      problems: ['category=WorkflowTaskFailed', 'cause=WorkflowTaskFailedCauseNonDeterministicError'],
    },
  ]);
  const shown = await cli('status', parked.threadId);
  expect(shown.code).toBe(0);
  expect(shown.stdout.split('\n')[0]).toBe(`${parked.threadId} root failed`);
  expect(shown.stdout).toContain('last error: workflow task keeps failing');

  // The fix (here: the good build again) replays the same history without a reset.
  await stop(bad);
  await startWorker(goodBundle());
  // Answered (a good worker can answer queries while the task is still failing elsewhere, so wait for the answer).
  await eventually(async () => (await parked.history()).length === 4, 30_000, 'the thread to recover');
  expect(await parked.waitForIdle({ settled: true })).toMatchObject({ status: 'idle', pendingCall: null });
  await parked.sendUserText('Anything else?');
  await parked.waitForIdle({ settled: true });
  expect(render(await parked.history())).toEqual([
    'user: Is CI green?',
    'call #1 wait_for_ci {}',
    'result #1: all checks passed',
    'assistant: CI is green.',
    'user: Anything else?',
    'assistant: Nothing else.',
  ]);
  await eventually(async () => !(await listedStuck()).includes(parked.threadId), 30_000, 'the stuck flag to clear');
  expect((await cli('threads', '--stuck')).stdout).toBe('');
});

it('brings back a thread the bad build started with the documented reset to its first task', async () => {
  // One worker per task queue and build in a process (the SDK refuses a second one).
  for (const w of [...running]) await stop(w);
  const bad = await startWorker({ code: badBundle });
  const badBuildId = bad.worker.options.buildId;
  const started = client.thread(uid('started-on-bad'));
  const before = calls.length;
  await started.sendUserText('Is CI green?');
  // Until its timer fires the bad build has no update handler yet: wait for the call, then for the idle thread.
  await eventually(() => calls.length > before, 30_000, 'the tool call');
  expect(await started.waitForIdle()).toMatchObject({ status: 'waiting_tool' });
  const call = calls[calls.length - 1]!;
  await stop(bad);

  await startWorker(goodBundle());
  await client.deliver(toolResult(call, 'all checks passed'));
  expect(await failedStatus(started)).toMatchObject({
    status: 'failed',
    lastError: expect.stringContaining('NON_DETERMINISTIC_ERROR'),
  });

  // docs/upgrading.md: find the first workflow task the bad build completed, reset to it.
  const events = (await started.workflow.fetchHistory()).events ?? [];
  const firstBad = events.find((e) => e.workflowTaskCompletedEventAttributes?.workerVersion?.buildId === badBuildId);
  expect(firstBad).toBeDefined();
  const reset = [
    'workflow',
    'reset',
    '--workflow-id',
    started.threadId,
    '--event-id',
    String(firstBad!.eventId),
    '--reason',
    'bad deploy',
  ];
  await promisify(execFile)(findTemporalCli({ install: false }), [...reset, '--address', inject('temporalAddress')]);

  // The new run re-runs the first slice: the store returns its committed result and the tool gets the same call
  // again. The tool result that came after the reset point is re-applied too; the first slice of a workflow task takes
  // the queue's first input only (decision 50), so the result comes next, finds the repeated call pending and answers
  // it (docs/upgrading.md).
  await eventually(
    () => calls.filter((c) => c.toolCallId === call.toolCallId).length === 2,
    30_000,
    'the repeated call',
  );
  const done = await started.waitForIdle({ settled: true });
  expect(done).toMatchObject({ status: 'idle', pendingCall: null });
  expect(done.dropped).toEqual({});
  expect(render(await started.history())).toEqual([
    'user: Is CI green?',
    'call #1 wait_for_ci {}',
    'result #1: all checks passed',
    'assistant: CI is green.',
  ]);
  await eventually(async () => !(await listedStuck()).includes(started.threadId), 30_000, 'the stuck flag to clear');
});
