/**
 * The scenarios, each asserting what docs/semantics.md and docs/reliability.md promise, whatever the configuration:
 * the committed history is exactly what was sent (byte for byte, nothing lost, nothing twice, in arrival order), the
 * model's next request showed it exactly, and the thread dropped nothing (`status().dropped` is empty), so any drop
 * would be counted with its reason. A scenario names the slice path it asked for and checks Temporal took it.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { ThreadHandle } from '../../src/client/thread-handle';
import type { HistoryItem, InputMessage, ToolResultContent } from '../../src/core/types';
import { childSpawned, reportFromChild } from '../../src/core/builtins/threads';
import { subscriptionEvent, toolResult, userText } from '../../src/tools/messages';
import type { Followed } from '../../src/client/follow';
import { checkReplay, eventually, uid } from '../helpers';
import { itemLine, transcript } from '../transcript';
import { bodyText, callText, contentBytes, SLOW_MARK, toolContent } from './content';
import { agentOf, HELPER, PLANNER } from './agents';
import type { MatrixCell } from './matrix';
import { floodScenario, workerKilledScenario } from './heavy';
import type { GuaranteeSystem } from './systems';

const KiB = 1024;
const MiB = 1024 * KiB;
const STAGE_THRESHOLD = 128 * KiB;

const SIZES: Partial<Record<MatrixCell['scenario'], number>> = {
  'result 1 B': 1,
  'result 127 KiB': 127 * KiB,
  'result 129 KiB': 129 * KiB,
  'result 1 MiB': MiB,
  'result 16 MiB': 16 * MiB,
};

/** Activities Temporal scheduled for the thread's current run (`runSlice`, `adoptSlice`), by name. */
async function activities(workflow: Pick<ThreadHandle['workflow'], 'fetchHistory'>): Promise<string[]> {
  const events = (await workflow.fetchHistory()).events ?? [];
  return events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}

/** The slice path the cell asked for was the one taken (in `workflow`'s run: default the thread's current one). */
async function expectPath(
  thread: ThreadHandle,
  path: MatrixCell['slicePath'],
  workflow: Pick<ThreadHandle['workflow'], 'fetchHistory'> = thread.workflow,
) {
  const names = await activities(workflow);
  if (path === 'adopted') expect(names, 'a slice adopted past its budget').toContain('adoptSlice');
  if (path === 'retry') expect(names, 'a regular activity retried the slice').toContain('runSlice');
}

async function settledHistory(thread: ThreadHandle, length: number): Promise<HistoryItem[]> {
  try {
    await eventually(async () => (await thread.history()).length >= length, 40_000, `${length} history items`);
  } catch (e) {
    // Say what the thread did instead: its status (drops, deferred inputs, pending call) and history so far.
    const status = await thread.status();
    const items = (await thread.history()).map((h) => JSON.stringify(h).slice(0, 160));
    throw new Error(`${String(e)}\nstatus: ${JSON.stringify(status)}\nhistory:\n${items.join('\n')}`);
  }
  const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  expect(status.dropped, 'no input dropped').toEqual({});
  return thread.history();
}

/**
 * Starts the cell's thread on the cell's client (retry: its commit of the result fails once), of the cell's agent
 * (`planner` with `agents: several`) unless `agent` names another.
 */
async function startThread(sys: GuaranteeSystem, cell: MatrixCell, prefix: string, agent = agentOf(cell)) {
  const threadId = uid(prefix);
  if (cell.slicePath === 'retry') sys.failOnce.add(threadId);
  const client = sys.client(cell.slicePath);
  const thread = await client.startThread({ threadId, ...agent });
  return { thread, threadId, client };
}

const slowArg = (cell: MatrixCell) => (cell.slicePath === 'adopted' ? { pace: SLOW_MARK } : {});

/** A spawned child's instructions: it goes idle, after a slow first slice on the adopted path. */
const idleChild = (cell: MatrixCell) => (cell.slicePath === 'adopted' ? `idle ${SLOW_MARK}` : 'idle');

/** A tool result of the cell's size, by the cell's delivery. */
export async function toolResultScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const bytes = SIZES[cell.scenario]!;
  const content = toolContent(bytes);
  expect(contentBytes(content) === bytes || bytes <= 1024, 'content of the named size').toBe(true);
  const { thread, threadId } = await startThread(sys, cell, 'result');
  const byTool = cell.delivery === 'signal';
  const text = callText(byTool ? 'emit' : 'wait', { bytes, ...slowArg(cell) });
  await thread.sendUserText(text);
  if (!byTool) {
    const status = await thread.waitForIdle({ timeoutMs: 60_000 });
    await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: status.pendingCall!.id }, content));
  }
  const history = await settledHistory(thread, 4);
  const call = history[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  expect(history).toEqual([
    { kind: 'user', text },
    { kind: 'tool_call', id: call.id, name: byTool ? 'emit' : 'wait', args: { bytes, ...slowArg(cell) } },
    { kind: 'tool_result', id: call.id, content },
    { kind: 'assistant', text: `answered tool_result ${byTool ? 'emit' : 'wait'}` },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the whole result').toBe(true);
  expect(bytes > STAGE_THRESHOLD || bytes < STAGE_THRESHOLD).toBe(true);
  await expectPath(thread, cell.slicePath);
}

/** An associative subscription event over the staging threshold, by the cell's delivery. */
export async function stagedEventScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const bytes = 129 * KiB;
  const content: ToolResultContent[] = [{ type: 'text', text: bodyText(bytes) }];
  const { thread, threadId } = await startThread(sys, cell, 'event');
  const byTool = cell.delivery === 'signal';
  const args = { bytes, emit: byTool, ...slowArg(cell) };
  const text = callText('watch', args);
  await thread.sendUserText(text);
  if (!byTool) {
    await eventually(async () => (await thread.history()).length >= 4, 60_000, 'the subscription');
    await thread.waitForIdle({ timeoutMs: 60_000 });
    const call = (await thread.history())[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
    await sys.deliver(
      cell.delivery,
      subscriptionEvent({ threadId, toolCallId: call.id }, content, { associative: true }),
    );
  }
  // The start and an event sent right after it may share one batch (docs/semantics.md §2): one answer for both.
  const history = await settledHistory(thread, byTool ? 5 : 6);
  const call = history[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  const event = history.at(-2) as Extract<HistoryItem, { kind: 'subscription_event' }>;
  const answeredStart = history.length === 6 ? [{ kind: 'assistant', text: 'answered tool_result watch' }] : [];
  expect(history).toEqual([
    { kind: 'user', text },
    { kind: 'tool_call', id: call.id, name: 'watch', args },
    { kind: 'tool_result', id: call.id, content: [{ type: 'text', text: 'watching' }] },
    ...answeredStart,
    {
      kind: 'subscription_event',
      toolCallId: call.id,
      invocation: { id: event.invocation.id, name: 'receive_event__injected', args: event.invocation.args },
      result: { id: event.invocation.id, content },
    },
    { kind: 'assistant', text: 'answered tool_result receive_event__injected' },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the whole event').toBe(true);
  // The result that started the subscription ran before the event: the path applies to the event's slice.
  await expectPath(thread, cell.slicePath);
}

/** A child's report over the staging threshold, by the cell's delivery, into a parent that spawned it. */
export async function stagedReportScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const bytes = 129 * KiB;
  const { thread, threadId } = await startThread(sys, cell, 'report');
  const args = { instructions: idleChild(cell), child_of: [threadId] };
  const text = callText('spawn_thread', args);
  await thread.sendUserText(text);
  const child = await eventually(async () => (await thread.status()).children[0], 60_000, 'the child');
  await thread.waitForIdle({ timeoutMs: 60_000 });
  const spawn = (await thread.history())[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  const content: ToolResultContent[] = [{ type: 'text', text: `Report from child thread: ${bodyText(bytes)}` }];
  const report: InputMessage = {
    id: randomUUID(),
    threadId,
    content: { type: 'tool_result', toolCallId: spawn.id, content },
    synthetic: { type: 'thread_report', toolCallId: spawn.id, childThreadId: child },
  };
  await sys.deliver(cell.delivery, report);
  const history = await settledHistory(thread, 6);
  const event = history[4] as Extract<HistoryItem, { kind: 'subscription_event' }>;
  expect(history.slice(4)).toEqual([
    {
      kind: 'subscription_event',
      toolCallId: spawn.id,
      childThreadId: child,
      invocation: { id: event.invocation.id, name: 'receive_event__injected', args: event.invocation.args },
      result: { id: event.invocation.id, content },
    },
    { kind: 'assistant', text: 'answered tool_result receive_event__injected' },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the whole report').toBe(true);
}

/**
 * User texts over the staging threshold sent while slow slices run, so the run continues-as-new (`maxRunEvents`
 * lowered through the thread's options) with staged inputs in the queue it carries; each arrives once, in order.
 */
export async function continueAsNewScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const threadId = uid('can');
  if (cell.slicePath === 'retry') sys.failOnce.add(threadId);
  const client = sys.client(cell.slicePath, { maxRunEvents: 12 });
  const texts = Array.from({ length: 6 }, (_, i) => `text ${i} ${bodyText(129 * KiB)}`);
  // Every answer streams slowly, so the texts queue up behind the running slice.
  const first = `first ${SLOW_MARK}`;
  await client.sendUserText(threadId, first, agentOf(cell));
  for (const t of texts) {
    if (cell.delivery === 'signal') await client.sendUserText(threadId, t);
    else await sys.deliver(cell.delivery, userText(threadId, t));
  }
  const thread = client.thread(threadId);
  const users = async () =>
    (await thread.history()).flatMap((h) => (h.kind === 'user' ? [h.text.replace(/^<interrupt>/, '')] : []));
  await eventually(async () => (await users()).length >= texts.length + 1, 60_000, 'every text committed');
  const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  expect(status.dropped, 'no input dropped').toEqual({});
  expect(await users(), 'every text once, in arrival order').toEqual([first, ...texts]);
  for (const t of texts) expect(sys.modelSawUserText(t), 'the model was shown each text whole').toBe(true);
  expect(status.runs, 'the run continued as new').toBeGreaterThanOrEqual(2);
}

/**
 * A rewind with a call pending (issue 28 §2): the call is archived, its late result is dropped as `rewound` (counted,
 * not lost silently), and what arrives after the rewind — a user text, then the next call's result by the cell's
 * delivery — reaches history exactly once, in order; the model never sees the archived call again.
 */
export async function rewindScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId, client } = await startThread(sys, cell, 'rewind');
  const first = callText('wait', { bytes: 1, ...slowArg(cell) });
  await thread.sendUserText(first);
  const archived = (await thread.waitForIdle({ timeoutMs: 60_000 })).pendingCall!;
  const r = await client.rewindThread(threadId, { to: 1 });
  expect(r).toEqual({ threadId, to: 1, branch: 1, archived: [1, 2] });
  const late = await client.deliver(toolResult({ threadId, toolCallId: archived.id }, 'too late'), {
    acknowledge: true,
  });
  expect(late, "the archived call's result").toEqual({ delivered: false, reason: 'rewound' });

  const second = callText('wait', { bytes: 2 });
  await thread.sendUserText(second);
  const status = await thread.waitForIdle({ timeoutMs: 60_000 });
  const content = toolContent(1024);
  await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: status.pendingCall!.id }, content));
  await eventually(async () => (await thread.history()).length >= 6, 40_000, 'the result after the rewind');
  const settled = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  expect(settled.dropped, "only the archived call's result dropped").toEqual({ rewound: 1 });
  const history = await thread.history();
  const call = history[3] as Extract<HistoryItem, { kind: 'tool_call' }>;
  expect(history).toEqual([
    { kind: 'user', text: first },
    { kind: 'rewind', to: 1, branch: 1 },
    { kind: 'user', text: second },
    { kind: 'tool_call', id: call.id, name: 'wait', args: { bytes: 2 } },
    { kind: 'tool_result', id: call.id, content },
    { kind: 'assistant', text: 'answered tool_result wait' },
  ]);
  expect(await thread.history({ branch: 1 })).toEqual([
    { kind: 'tool_call', id: archived.id, name: 'wait', args: { bytes: 1, ...slowArg(cell) } },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the result after the rewind').toBe(true);
  await expectPath(thread, cell.slicePath);
}

/**
 * Temporal's own cancel of a thread with a child (release 0.10, decision 76), as the UI's button or `temporal workflow
 * cancel` sends it: the thread and its child both end cancelled, and what the thread committed stays.
 */
export async function cancelledTreeScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId, client } = await startThread(sys, cell, 'cancel');
  await thread.sendUserText(callText('spawn_thread', { instructions: idleChild(cell), child_of: [threadId] }));
  const child = await eventually(async () => (await thread.status()).children[0], 60_000, 'the child');
  await thread.waitForIdle({ timeoutMs: 60_000 });
  const committed = await thread.history();
  await client.temporal.workflow.getHandle(threadId).cancel();
  for (const id of [threadId, child]) {
    const handle = client.temporal.workflow.getHandle(id);
    await eventually(async () => (await handle.describe()).status.name === 'CANCELLED' || undefined, 60_000, id).catch(
      async (e: unknown) => {
        // What the thread's history shows is what to read when it did not end.
        const events = (await handle.fetchHistory()).events ?? [];
        const failed = events.flatMap((ev) => {
          const f = ev.workflowTaskFailedEventAttributes;
          return f ? [`${f.cause}: ${f.failure?.message}`] : [];
        });
        throw new Error(
          `${id} not cancelled; its events: ${events.map((ev) => ev.eventType).join(',')}; failed tasks: ${failed.join(' | ')}`,
          { cause: e },
        );
      },
    );
  }
  expect(await thread.history(), 'what the thread committed stays').toEqual(committed);
}

/**
 * Decision 79: a thread queried without pause while its slices run (refused first, with provider limits) and its
 * child still replay. Temporal's worker delivers a local slice's result a task late when a query arrives meanwhile,
 * and a patch asked after such a result, or an update accepted in the late task, would not replay (decisions 79 to
 * 81).
 */
export async function queriedScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId, client } = await startThread(sys, cell, 'queried');
  let querying = true;
  const queries = (async () => {
    while (querying) await thread.status().catch(() => undefined);
  })();
  const spawn = callText('spawn_thread', { instructions: idleChild(cell), child_of: [threadId] });
  try {
    for (const text of ['first', 'second', spawn, 'last']) {
      await sys.throttle();
      await thread.sendUserText(text);
      // An update: one accepted in a late task broke the replay on SDK 1.23 and 1.24 (decisions 80, 81).
      await thread.waitForIdle({ timeoutMs: 60_000 });
    }
  } finally {
    querying = false;
    await queries;
  }
  const { children } = await thread.status();
  expect(children, 'the spawned child').toHaveLength(1);
  for (const id of [threadId, children[0]!])
    await checkReplay({ threadId: id, workflow: client.temporal.workflow.getHandle(id) }, id);
}

/**
 * Followers (`thread.follow()`, what `tail` runs) attached at many moments of a thread's run, from before its first
 * text to after its last answer, each through the system's own live events: every one shows exactly the committed
 * history, with nothing missed and nothing twice (decision 82).
 */
export async function followedScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId } = await startThread(sys, cell, 'followed');
  const followers: { steps: Followed[]; stop: () => Promise<unknown> }[] = [];
  const follow = () => {
    const steps: Followed[] = [];
    const abort = new AbortController();
    const done = (async () => {
      for await (const s of thread.follow({ signal: abort.signal })) steps.push(s);
    })();
    followers.push({ steps, stop: async () => (abort.abort(), await done) });
  };
  const pause = () => new Promise((r) => setTimeout(r, 25));
  try {
    follow();
    const byTool = cell.delivery === 'signal';
    const content = toolContent(64);
    await thread.sendUserText(callText(byTool ? 'emit' : 'wait', { bytes: 64, ...slowArg(cell) }));
    follow();
    if (!byTool) {
      const status = await thread.waitForIdle({ timeoutMs: 60_000 });
      follow();
      await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: status.pendingCall!.id }, content));
    }
    // The call answered first: a text that came while it was pending would interrupt it (its result, arriving after
    // the runtime answered the call as interrupted, is then dropped as `already_processed`).
    await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
    for (let i = 0; i < 4; i++) {
      await pause();
      follow();
      await sys.throttle();
      await thread.sendUserText(`and then ${i}`);
      follow();
    }
    const history = await settledHistory(thread, 6);
    follow();
    const expected = history.map(itemLine).filter((l) => l !== undefined);
    await eventually(
      () => followers.every((f) => JSON.stringify(transcript(f.steps)) === JSON.stringify(expected)),
      20_000,
      'every follower showing the committed history',
    ).catch(() => undefined);
    followers.forEach((f, i) => expect(transcript(f.steps), `follower ${i}`).toEqual(expected));
  } finally {
    await Promise.all(followers.map((f) => f.stop()));
  }
}

/**
 * A thread stopped at its budget (issue 27 §1): the slice that would start over it calls no model and commits nothing;
 * what arrives meanwhile (the tool result by the cell's delivery, a user text) is kept, not dropped; a raise resumes
 * the thread, which then commits each input once.
 */
export async function overBudgetScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const threadId = uid('budget');
  if (cell.slicePath === 'retry') sys.failOnce.add(threadId);
  const client = sys.client(cell.slicePath);
  // One completion spends more than one token: the first slice runs, the next finds the limit reached.
  const thread = await client.startThread({ threadId, budget: { totalTokens: 1 }, ...agentOf(cell) });
  const byTool = cell.delivery === 'signal';
  const content = toolContent(256);
  const text = callText(byTool ? 'emit' : 'wait', { bytes: 256, ...slowArg(cell) });
  await sys.throttle();
  await thread.sendUserText(text);
  if (!byTool) {
    const waiting = await thread.waitForIdle({ timeoutMs: 60_000 });
    await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: waiting.pendingCall!.id }, content));
  }
  const over = await eventually(
    async () => {
      const st = await thread.status();
      return st.status === 'over_budget' ? st : undefined;
    },
    60_000,
    'the thread stopping at its budget',
  );
  expect(over.overBudget).toMatchObject({ scope: 'thread', key: threadId, field: 'totalTokens', limit: 1 });
  const calls = sys.modelCalls().length;
  await thread.sendUserText('meanwhile');
  await eventually(async () => (await thread.status()).queued >= 1, 30_000, 'the text queued while over budget');
  expect((await thread.status()).status, 'still over budget').toBe('over_budget');
  expect(sys.modelCalls().length, 'no model call while over budget').toBe(calls);
  const committed = await thread.history();
  expect(
    committed.map((h) => h.kind),
    'nothing committed past the limit',
  ).toEqual(['user', 'tool_call']);

  const raised = await client.setBudget({ thread: threadId }, { totalTokens: 1_000_000 });
  expect(raised.woken).toContain(threadId);
  const history = await settledHistory(thread, 5);
  const call = history[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  expect(history.slice(0, 3)).toEqual([
    { kind: 'user', text },
    { kind: 'tool_call', id: call.id, name: byTool ? 'emit' : 'wait', args: { bytes: 256, ...slowArg(cell) } },
    { kind: 'tool_result', id: call.id, content },
  ]);
  // The text that waited comes once, after the result (in the result's slice or the next), and is answered.
  expect(history.filter((h) => h.kind === 'user' && h.text === 'meanwhile')).toHaveLength(1);
  expect(history.filter((h) => h.kind === 'tool_result')).toHaveLength(1);
  expect(history.at(-1)?.kind).toBe('assistant');
  expect(sys.modelSaw(content), 'the model was shown the whole result').toBe(true);
  expect((await thread.status()).status).toBe('idle');
  await checkReplay(thread, threadId);
}

/**
 * A thread moved onto a new run by `migrate` (issue 39) while its call is pending: the sweep reports it moved, the
 * result the cell delivers afterwards lands in the new run, and the history is exactly what was sent, once.
 */
export async function migratedScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId, client } = await startThread(sys, cell, 'migrate');
  const text = callText('wait', { bytes: 1, ...slowArg(cell) });
  await thread.sendUserText(text);
  const pending = (await thread.waitForIdle({ timeoutMs: 60_000 })).pendingCall!;
  const before = new Date();
  // Visibility lists the thread within moments: until then a sweep finds nothing.
  const report = await eventually(
    async () => {
      const r = await client.migrateThreads({ before, threadIds: [threadId] });
      return r.found > 0 ? r : undefined;
    },
    20_000,
    'the thread listed and moved',
  );
  expect(report.threads).toEqual([expect.objectContaining({ threadId, outcome: 'moved' })]);
  const oldRun = client.temporal.workflow.getHandle(threadId, report.threads[0]!.runId);
  const content = toolContent(1024);
  await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: pending.id }, content));
  const history = await settledHistory(thread, 4);
  const call = history[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  expect(history).toEqual([
    { kind: 'user', text },
    { kind: 'tool_call', id: pending.id, name: 'wait', args: { bytes: 1, ...slowArg(cell) } },
    { kind: 'tool_result', id: call.id, content },
    { kind: 'assistant', text: 'answered tool_result wait' },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the result after the move').toBe(true);
  expect((await thread.status()).runs, 'the thread continued as new').toBeGreaterThanOrEqual(2);
  // The slice the cell's path shapes (the answer to the result) ran in the new run; the first one in the old run.
  await expectPath(thread, cell.slicePath, {
    fetchHistory: async () => {
      const [a, b] = await Promise.all([oldRun.fetchHistory(), thread.workflow.fetchHistory()]);
      return { ...b, events: [...(a.events ?? []), ...(b.events ?? [])] };
    },
  });
}

/** The thread a model request was made for (its system prompt ends with the thread's id). */
const threadOf = (system: string) => /Your current thread ID is `([^`]+)`/.exec(system)?.[1];

/**
 * Many agents (issue 40): a `planner` thread spawns a child of another agent, `helper`, which runs the helper's
 * instructions over the planner's prefix and reports once; then, while the planner waits on a call, `setAgent` moves
 * it to `helper`, and the call's result, by the cell's delivery, is answered by a request with the helper's
 * instructions. The root's history is exactly what was sent, its requests until the move carried the planner's
 * instructions, and nothing was dropped.
 */
export async function childOfAnotherAgentScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  const { thread, threadId, client } = await startThread(sys, cell, 'agents', { agent: 'planner' });
  // The child's instructions make it report at once (the suite's model rule reads them in the child's seed).
  const instructions = callText('report_to_parent', { report: 'helped' });
  const spawnArgs = { instructions, child_of: [threadId], agent: 'helper', ...slowArg(cell) };
  const spawnText = callText('spawn_thread', spawnArgs);
  await thread.sendUserText(spawnText);
  const child = await eventually(async () => (await thread.status()).children[0], 60_000, 'the child');
  const reported = async () =>
    (await thread.history()).some((h) => h.kind === 'subscription_event' && h.childThreadId === child);
  await eventually(reported, 60_000, "the child's report");
  await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
  const childThread = client.thread(child);
  const childStatus = await childThread.waitForIdle({ timeoutMs: 60_000 });
  expect(childStatus.agent, "the child's agent").toBe('helper');
  expect(childStatus.dropped, 'no input dropped in the child').toEqual({});

  const waitText = callText('wait', { bytes: 1 });
  await thread.sendUserText(waitText);
  const pending = (await thread.waitForIdle({ timeoutMs: 60_000 })).pendingCall!;
  const movedAt = sys.modelSystems().length;
  await client.setAgent(threadId, 'helper');
  const content = toolContent(1024);
  await sys.deliver(cell.delivery, toolResult({ threadId, toolCallId: pending.id }, content));

  const history = await settledHistory(thread, 10);
  const spawn = history[1] as Extract<HistoryItem, { kind: 'tool_call' }>;
  // The child may report before the planner answered its spawn: then one answer for both (docs/semantics.md §2).
  const answeredSpawn =
    history[3]?.kind === 'assistant' ? [{ kind: 'assistant', text: 'answered tool_result spawn_thread' }] : [];
  const event = history[3 + answeredSpawn.length] as Extract<HistoryItem, { kind: 'subscription_event' }>;
  const call = history.at(-3) as Extract<HistoryItem, { kind: 'tool_call' }>;
  expect(history).toEqual([
    { kind: 'user', text: spawnText },
    { kind: 'tool_call', id: spawn.id, name: 'spawn_thread', args: spawnArgs },
    { kind: 'tool_result', id: spawn.id, content: [{ type: 'text', text: childSpawned(child) }] },
    ...answeredSpawn,
    {
      kind: 'subscription_event',
      toolCallId: spawn.id,
      childThreadId: child,
      invocation: { id: event.invocation.id, name: 'receive_event__injected', args: event.invocation.args },
      result: { id: event.invocation.id, content: [{ type: 'text', text: reportFromChild('helped') }] },
    },
    { kind: 'assistant', text: 'answered tool_result receive_event__injected' },
    { kind: 'user', text: waitText },
    { kind: 'tool_call', id: pending.id, name: 'wait', args: { bytes: 1 } },
    { kind: 'tool_result', id: call.id, content },
    { kind: 'assistant', text: 'answered tool_result wait' },
  ]);
  expect(sys.modelSaw(content), 'the model was shown the result after the move').toBe(true);
  const reports = (await childThread.history()).filter((h) => h.kind === 'tool_call' && h.name === 'report_to_parent');
  expect(reports, 'the child reported once').toHaveLength(1);

  // Each thread's requests carried its agent's instructions: the child's the helper's, the root's the planner's until
  // the move and the helper's after it (the one that answered the result).
  const systems = sys.modelSystems();
  const of = (id: string, from = 0, to = systems.length) => systems.slice(from, to).filter((s) => threadOf(s) === id);
  expect(of(child).length, "the child's requests").toBeGreaterThanOrEqual(2);
  for (const s of of(child)) expect(s.startsWith(HELPER), `a request of the child: ${s.slice(0, 60)}`).toBe(true);
  expect(of(threadId, 0, movedAt).length, "the root's requests before the move").toBeGreaterThanOrEqual(3);
  for (const s of of(threadId, 0, movedAt))
    expect(s.startsWith(PLANNER), `a request of the root before the move: ${s.slice(0, 60)}`).toBe(true);
  // The answer's request (twice if its slice was retried), and nothing else of the root, came after the move.
  const after = of(threadId, movedAt);
  expect(after.length, "the root's requests after the move").toBeGreaterThanOrEqual(1);
  for (const s of after) expect(s.startsWith(HELPER), 'the answer came from the helper').toBe(true);
  expect((await thread.status()).agent, "the root's agent").toBe('helper');
  await expectPath(thread, cell.slicePath);
}

/**
 * Many agents (issue 40 §5): a thread started with an agent no worker defines waits with its queue (status
 * `agent_unavailable`, no workflow task failing, no model call), takes a second text by the cell's delivery into its
 * queue meanwhile, and once moved to `planner` answers both, in order, each once, with the planner's instructions.
 */
export async function missingAgentScenario(sys: GuaranteeSystem, cell: MatrixCell) {
  // A client that does not list the workers' agents (one in another process; the agent was since removed from the
  // workers): the system's own client refuses a name its worker lacks. Any thread option makes such a client.
  const threadId = uid('ghost');
  const client = sys.client(cell.slicePath, { dedupWindow: 4096 });
  const thread = await client.startThread({ threadId, agent: 'ghost' });
  const first = cell.slicePath === 'adopted' ? `anyone there? ${SLOW_MARK}` : 'anyone there?';
  await thread.sendUserText(first);
  await eventually(
    async () => (await thread.status()).status === 'agent_unavailable' || undefined,
    60_000,
    'the wait for the agent',
  );
  const second = 'still waiting';
  // An acknowledged delivery answers once the thread takes the input into a batch: after the move, so not awaited here.
  const delivering =
    cell.delivery === 'signal'
      ? client.sendUserText(threadId, second)
      : sys.deliver(cell.delivery, userText(threadId, second));
  const waiting = await eventually(
    async () => {
      const s = await thread.status();
      return s.queued >= 1 ? s : undefined;
    },
    60_000,
    'the second text queued',
  );
  expect(waiting.status, 'still waiting for its agent').toBe('agent_unavailable');
  expect(waiting.agentUnavailable?.agent).toBe('ghost');
  expect(
    sys.modelSystems().filter((s) => threadOf(s) === threadId),
    'no model call while waiting',
  ).toEqual([]);
  await client.setAgent(threadId, 'planner');
  await delivering;
  const history = await settledHistory(thread, 4);
  expect(history).toEqual([
    { kind: 'user', text: first },
    { kind: 'assistant', text: `read ${Buffer.byteLength(first)} bytes` },
    { kind: 'user', text: second },
    { kind: 'assistant', text: `read ${Buffer.byteLength(second)} bytes` },
  ]);
  const mine = sys.modelSystems().filter((s) => threadOf(s) === threadId);
  expect(mine.length).toBeGreaterThanOrEqual(2);
  for (const s of mine) expect(s.startsWith(PLANNER), 'answered by the planner').toBe(true);
  expect((await thread.status()).agent).toBe('planner');
  await expectPath(thread, cell.slicePath);
}

export const SCENARIOS: Partial<
  Record<MatrixCell['scenario'], (sys: GuaranteeSystem, cell: MatrixCell) => Promise<void>>
> = {
  'result 1 B': toolResultScenario,
  'result 127 KiB': toolResultScenario,
  'result 129 KiB': toolResultScenario,
  'result 1 MiB': toolResultScenario,
  'result 16 MiB': toolResultScenario,
  'staged event': stagedEventScenario,
  'staged report': stagedReportScenario,
  'continue-as-new with staged queue': continueAsNewScenario,
  'flood 3000': floodScenario,
  'worker killed mid-slice': workerKilledScenario,
  'rewind with a call pending': rewindScenario,
  'cancelled tree': cancelledTreeScenario,
  'queried while slicing': queriedScenario,
  'followed mid-run': followedScenario,
  'over budget': overBudgetScenario,
  'migrated with a call pending': migratedScenario,
  'child of another agent, moved': childOfAnotherAgentScenario,
  'agent missing, moved': missingAgentScenario,
};
