/**
 * Threads end to end on the dev server with the PostgreSQL store: a tool round trip, a child tree, a subscription
 * event handled by an event child, and a worker process killed right after its commit (no duplicated turn). Exact
 * histories, and the rows behind them.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { PostgresConversationStore } from '../src/store/postgres';
import { subscriptionEvent } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { startWorkerProcess } from './crash-worker';
import { treeScript } from './fixtures/tree-script';
import { watchTool } from './fixtures/watch-tool';
import { eventually, greenBuildTool, render, startTestSystem, type TestSystem, uid } from './helpers';
import { createTestDatabase, queryOnce } from './postgres';

const subs: ToolContext[] = [];
const watch = watchTool(subs);

let url: string;
let sys: TestSystem;
const procs: ChildProcess[] = [];

beforeAll(async () => {
  url = await createTestDatabase('threads');
  sys = await startTestSystem({
    model: new ScriptedModel(treeScript),
    tools: [greenBuildTool(), watch],
    store: new PostgresConversationStore({ connectionString: url }),
    storePath: url,
  });
});
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null) p.kill('SIGKILL');
});
afterAll(async () => {
  await sys?.shutdown();
});

/** Rows of a thread in the database, counted behind the store's back. */
const rowsOf = async (threadId: string) =>
  (
    await queryOnce<{ items: number; slices: number }>(
      url,
      'SELECT (SELECT count(*)::int FROM items WHERE thread_id = $1) AS items, (SELECT count(*)::int FROM slices WHERE thread_id = $1) AS slices',
      [threadId],
    )
  )[0];

it('runs a tool round trip', async () => {
  const thread = await sys.client.startThread({ threadId: uid('pg-build') });
  await thread.sendUserText('call get_build_status {"build_id":"42"}');
  const status = await thread.waitForIdle({ settled: true });
  expect(render(await thread.history())).toEqual([
    'user: call get_build_status {"build_id":"42"}',
    'call #1 get_build_status {"build_id":"42"}',
    'result #1: Build 42: green',
    'assistant: ok: Build 42: green',
  ]);
  expect(status).toMatchObject({ status: 'idle', slices: 2, historyLength: 4, pendingCall: null });
  expect(await rowsOf(thread.threadId)).toEqual({ items: 4, slices: 2 });
});

it('spawns a child that reports and closes; both threads are recorded with their tree', async () => {
  const root = await sys.client.startThread({ threadId: uid('pg-tree') });
  await root.sendUserText('spawn report:A done');
  const [childId] = (await root.waitForIdle({ settled: true })).children;
  await eventually(
    async () => (await root.history()).filter((i) => i.kind === 'subscription_event').length === 2,
    60_000,
    'report and shutdown',
  );
  await sys.client.thread(childId!).waitForIdle({ settled: true });
  await root.waitForIdle({ settled: true });
  const lines = render(await root.history());
  expect(lines.filter((l) => !l.startsWith('assistant: '))).toEqual([
    'user: spawn report:A done',
    `call #1 spawn_thread {"instructions":"report:A done","child_of":["${root.threadId}"]}`,
    `result #1: Child thread is successfully spawned and has ID: ${childId}. You will be notified automatically when the child has anything to report. Make sure that you **do not** do the task assigned to the child thread.`,
    'event #1: Report from child thread: A done',
    `event #1: Child thread with ID ${childId} has shut down`,
  ]);
  expect(lines.filter((l) => l.startsWith('assistant: ')).at(-1)).toBe(
    `assistant: noted: Child thread with ID ${childId} has shut down`,
  );
  expect(render(await sys.client.thread(childId!).history())).toEqual([
    `result #1: You are now INSIDE the thread that you requested to create. Your thread ID is ${childId}. Your next task is to exactly follow these instructions: report:A done\n. Start by repeating to yourself the instructions, ignoring thinking from the parent context. Make sure to not be confused by the parent context. If the parent was planning to spawn more threads, you should not.`,
    'call #2 report_to_parent {"report":"A done"}',
    'result #2: Report sent to parent thread.',
    `call #3 close_thread {"thread_id":"${childId}"}`,
  ]);
  expect(await sys.store.getThread(childId!)).toEqual({
    threadId: childId,
    kind: 'child',
    parentThreadId: root.threadId,
    rootThreadId: root.threadId,
    spawnOrder: 2,
    spawnToolCallId: expect.any(String),
    closed: true,
  });
});

it('hands a subscription event to an event child whose report reaches the parent', async () => {
  const thread = await sys.client.startThread({ threadId: uid('pg-sub') });
  await thread.sendUserText('call watch {"topic":"builds"}');
  await thread.waitForIdle({ settled: true });
  const ctx = subs.find((s) => s.threadId === thread.threadId)!;
  await sys.client.deliver(subscriptionEvent(ctx, 'tick'));
  await eventually(
    async () => (await thread.history()).some((i) => i.kind === 'subscription_event'),
    60_000,
    'the report',
  );
  const status = await thread.waitForIdle({ settled: true });
  const [childId] = status.children;
  expect(render(await thread.history())).toEqual([
    'user: call watch {"topic":"builds"}',
    'call #1 watch {"topic":"builds"}',
    'result #1: watching',
    'assistant: ok: watching',
    `event #1: An event from your subscription ${ctx.toolCallId} was processed by a child thread ${childId}. The subscription remains active. Report from the child:\nprocessed tick`,
    `assistant: noted: An event from your subscription ${ctx.toolCallId} was processed by a child thread ${childId}. The subscription remains active. Report from the child:\nprocessed tick`,
  ]);
  expect(render(await sys.client.thread(childId!).history())).toEqual([
    'call #1 spawn_thread {"instructions":"Spawning thread to process incoming event."}',
    `result #1: You are now INSIDE the thread for processing the single event above. Your thread ID is ${childId}, the parent which is still subscribing is ${thread.threadId}. Process the single subscription event above, report to the parent if appropriate, then close the thread after processing this event. Your outputs are NOT VISIBLE to the user, if you want to show them something, send a report to your parent.`,
    `call #2 receive_event__injected {"original_args":{"topic":"builds"},"original_tool_call_id":"${ctx.toolCallId}","original_tool_name":"watch"}`,
    'result #2: tick',
    `call #3 close_thread {"thread_id":"${childId}","report_to_parent":"processed tick"}`,
  ]);
  expect(status.subscriptions).toEqual({ [ctx.toolCallId]: 'watch' });
});

it('does not duplicate a turn when a worker process dies after committing, before reporting', async () => {
  // The test process runs no worker on this queue: two worker processes on the same database do, one after the other.
  const crash = await startTestSystem({
    model: new ScriptedModel(() => ({ text: 'unused' })),
    noWorker: true,
    store: new PostgresConversationStore({ connectionString: url }),
    storePath: url,
  });
  try {
    const start = (env: Record<string, string> = {}) => {
      const w = startWorkerProcess(crash.taskQueue, url, env);
      procs.push(w.child);
      return w;
    };
    const a = start({ CRASH_AFTER_COMMIT: '1' });
    await a.waitFor(/^READY$/);
    const thread = await crash.client.startThread({ threadId: uid('pg-crash') });
    await thread.sendUserText('call a tool');
    await a.exited;
    expect(a.lines.filter((l) => l.startsWith('COMMITTED'))).toHaveLength(1);
    expect(a.lines.some((l) => l.startsWith('DISPATCHED'))).toBe(false);

    const b = start();
    await b.waitFor(/^READY$/);
    // The retried slice finds its commit in the database, dispatches the call and reports.
    await b.waitFor(/^DISPATCHED /);
    const status = await thread.waitForIdle({ timeoutMs: 60_000 });
    expect(status).toMatchObject({ status: 'waiting_tool', slices: 1, historyLength: 3 });
    expect(render(await thread.history())).toEqual(['user: call a tool', 'assistant: calling', 'call #1 note {"n":1}']);
    expect(await rowsOf(thread.threadId)).toEqual({ items: 3, slices: 1 });
  } finally {
    await crash.shutdown();
  }
});
