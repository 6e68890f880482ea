/**
 * Many workers on the cluster: three worker processes (`cluster-worker.ts`, identities `worker-1..3`) serve one task
 * queue against one PostgreSQL conversation store, and 500 threads run through them — tool round trips whose results
 * the test delivers, trees of two children that each wait on a tool and report back, and subscriptions whose event an
 * event child handles. Once a third of the threads have their first turn committed, with the rest in flight (half of
 * the first turns stream for ~800 ms: past the 500 ms local-slice budget, so they are handed off to their worker's own
 * queue and adopted there), one worker is SIGKILLed; the results are delivered after that. What the dead worker held
 * comes back through Temporal's timeouts: its sticky queues (5 s here), its workflow tasks with their local slices
 * (10 s), slices it had adopted (4 s heartbeat) or was about to adopt (10 s schedule-to-start), each followed by the
 * regular slice activity on the shared queue.
 *
 * Every thread then ends with its exact history, nothing dropped or duplicated (the store's rows agree), nothing stuck
 * (settled), no workflow task failed for nondeterminism (and every history that moved between workers replays), and
 * Temporal's own record shows that all three workers ran workflow tasks before the kill and that the survivors took
 * over threads whose earlier tasks the killed worker ran. The closing JSON line counts what happened (tasks per worker,
 * threads moved, timeouts by kind, local slices, adoptions, fallbacks, time per phase).
 *
 * MANY_WORKERS_THREADS changes the number of threads; MANY_WORKERS_LOCAL_SLICE_BUDGET_MS sets the threads'
 * `localSliceBudgetMs` (0: every slice a regular activity, as in release 0.2).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ThreadHandle } from '../../src/client/thread-handle';
import * as Threads from '../../src/core/builtins/threads';
import { ScriptedModel } from '../../src/model/scripted';
import { PostgresConversationStore } from '../../src/store/postgres';
import { subscriptionEvent, toolResult } from '../../src/tools/messages';
import { eventually, render, startTestSystem, type TestSystem, uid } from '../helpers';
import { createTestDatabase } from '../postgres';

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

const THREADS = Number(process.env.MANY_WORKERS_THREADS ?? 500);
/** The threads' `localSliceBudgetMs`; undefined: the release's default. */
const LOCAL_SLICE_BUDGET_MS =
  process.env.MANY_WORKERS_LOCAL_SLICE_BUDGET_MS === undefined
    ? undefined
    : Number(process.env.MANY_WORKERS_LOCAL_SLICE_BUDGET_MS);
const WORKER_IDS = ['worker-1', 'worker-2', 'worker-3'];
const VICTIM = 'worker-2';
/** Parts of a slow first turn stream this far apart: four parts, past the 500 ms local-slice budget. */
const SLOW_PART_MS = 200;
/** Bounds on the test's own concurrent calls: sends and deliveries, and the waits and checks. */
const SEND_CONCURRENCY = 24;
const CHECK_CONCURRENCY = 40;
/** Per wait: a thread of the killed worker is picked up again within ~10–20 s (workflow task and hand-off timeouts). */
const WAIT_MS = 150_000;

type Kind = 'tool' | 'tree' | 'sub';
interface Child {
  id: string;
  label: 'a' | 'b';
  /** Its pending `child_wait` call. */
  callId: string;
}
interface Thread {
  n: number;
  kind: Kind;
  slow: boolean;
  command: string;
  handle: ThreadHandle;
  /** `tool`: the pending `wait_for_ci` call; `sub`: the subscription's call. */
  callId?: string;
  children: Child[];
  eventChild?: string;
}

interface WorkerProc {
  identity: string;
  child: ChildProcess;
  lines: string[];
  ready: Promise<void>;
  exited: Promise<void>;
}

let url: string;
let sys: TestSystem;
const workers: WorkerProc[] = [];

function startWorker(identity: string): WorkerProc {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'cluster-worker.ts')], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('clusterAddress'),
      TASK_QUEUE: sys.taskQueue,
      STORE_URL: url,
      BUNDLE_PATH: inject('workflowBundlePath'),
      WORKER_ID: identity.replace('worker-', ''),
      SLOW_PART_MS: String(SLOW_PART_MS),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const ready = new Promise<void>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line === 'READY') resolve();
      }
    });
    void exited.then(() => reject(new Error(`${identity} exited before it was ready: ${lines.join(' | ')}`)));
  });
  ready.catch(() => undefined);
  const w = { identity, child, lines, ready, exited };
  workers.push(w);
  return w;
}

const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Runs `fn` over `items`, at most `limit` at a time. */
async function mapLimit<I, R>(
  items: readonly I[],
  limit: number,
  fn: (item: I, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

beforeAll(async () => {
  url = await createTestDatabase('many_workers');
  const store = new PostgresConversationStore({ connectionString: url, pool: { max: 20 } });
  // The tables exist before anything counts their rows (the workers would create them on their first use).
  await store.migrate();
  // The test process runs no worker: it starts threads, delivers results and reads the store and Temporal.
  sys = await startTestSystem({
    model: new ScriptedModel(() => ({ text: 'unused' })),
    noWorker: true,
    store,
    storePath: url,
    ...(LOCAL_SLICE_BUDGET_MS !== undefined && { threadOptions: { localSliceBudgetMs: LOCAL_SLICE_BUDGET_MS } }),
  });
});
afterAll(async () => {
  await Promise.all(
    workers.map(async (w) => {
      if (!alive(w.child)) return;
      w.child.kill('SIGTERM');
      const killer = setTimeout(() => w.child.kill('SIGKILL'), 10_000);
      await w.exited;
      clearTimeout(killer);
    }),
  );
  await sys?.shutdown();
});

const commandFor = (kind: Kind, n: number) =>
  ({
    tool: `call wait_for_ci {"build":${n}}`,
    tree: `spawn wait:a ${n};wait:b ${n}`,
    sub: `call watch {"topic":"t${n}"}`,
  })[kind];

/** A root's committed history once its first turns are done and it waits on the test. */
function parkedLines(t: Thread): string[] {
  const user = `user: ${t.command}`;
  const id = t.handle.threadId;
  switch (t.kind) {
    case 'tool':
      return [user, `call #1 wait_for_ci {"build":${t.n}}`];
    case 'sub':
      return [user, `call #1 watch {"topic":"t${t.n}"}`, 'result #1: watching', 'assistant: ok: watching'];
    case 'tree': {
      const [a, b] = t.children;
      return [
        user,
        `call #1 spawn_thread {"instructions":"wait:a ${t.n}","child_of":["${id}"]}`,
        `result #1: ${Threads.childSpawned(a!.id)}`,
        `call #2 spawn_thread {"instructions":"wait:b ${t.n}","child_of":["${id}"]}`,
        `result #2: ${Threads.childSpawned(b!.id)}`,
        'assistant: waiting',
      ];
    }
  }
}

/** A root's final committed history. */
function finalLines(t: Thread): string[] {
  const head = parkedLines(t);
  switch (t.kind) {
    case 'tool':
      return [...head, `result #1: Build ${t.n}: green`, `assistant: ok: Build ${t.n}: green`];
    case 'sub': {
      const report = Threads.eventChildClosed(t.callId!, t.eventChild!, `processed tick ${t.n}`);
      return [...head, `event #1: ${report}`, `assistant: noted: ${report}`];
    }
    case 'tree': {
      const [a, b] = [Threads.reportFromChild(`a ${t.n}`), Threads.reportFromChild(`b ${t.n}`)];
      return [...head, `event #1: ${a}`, `assistant: noted: ${a}`, `event #2: ${b}`, `assistant: noted: ${b}`];
    }
  }
}

const childParked = (t: Thread, c: Child) => [
  `result #1: ${Threads.childSeed(c.id, `wait:${c.label} ${t.n}`)}`,
  'call #2 child_wait {}',
];
const childFinal = (t: Thread, c: Child) => [
  ...childParked(t, c),
  `result #2: ci passed ${c.label} ${t.n}`,
  `call #3 report_to_parent {"report":"${c.label} ${t.n}"}`,
  `result #3: ${Threads.REPORT_SENT}`,
  'assistant: child done',
];
const eventChildFinal = (t: Thread) => [
  `call #1 spawn_thread {"instructions":"${Threads.EVENT_CHILD_SPAWN_INSTRUCTIONS}"}`,
  `result #1: ${Threads.eventChildSeed(t.eventChild!, t.handle.threadId)}`,
  `call #2 receive_event__injected {"original_args":{"topic":"t${t.n}"},"original_tool_call_id":"${t.callId}","original_tool_name":"watch"}`,
  `result #2: tick ${t.n}`,
  `call #3 close_thread {"thread_id":"${t.eventChild}","report_to_parent":"processed tick ${t.n}"}`,
];

/** Resolves once `handle`'s committed history has at least `n` items. */
const historyReaches = (handle: ThreadHandle, n: number) =>
  eventually(async () => (await handle.history()).length >= n, WAIT_MS, `${handle.threadId} to reach ${n} items`);

const identity = (e: HistoryEvent) => e.workflowTaskCompletedEventAttributes?.identity ?? undefined;
const eventMs = (e: HistoryEvent) => (e.eventTime ? tsToMs(e.eventTime) : 0);

it(`runs ${THREADS} threads on ${WORKER_IDS.length} worker processes, one SIGKILLed mid-run: exact histories, any worker serves any thread`, async () => {
  const started = Date.now();
  for (const id of WORKER_IDS) startWorker(id);
  await Promise.all(workers.map((w) => w.ready));
  /** Milliseconds each phase took (for the summary). */
  const phases: Record<string, number> = { workersReady: Date.now() - started };
  let phaseStart = Date.now();
  const phaseDone = (name: string) => {
    phases[name] = Date.now() - phaseStart;
    phaseStart = Date.now();
  };
  const victim = workers.find((w) => w.identity === VICTIM)!;

  const kinds: Kind[] = ['tool', 'tree', 'sub'];
  const threads: Thread[] = Array.from({ length: THREADS }, (_, i) => {
    const n = i + 1;
    const kind = kinds[i % kinds.length]!;
    const slow = n % 2 === 0;
    const threadId = `${uid(`mw-${kind}-${n}`)}${slow ? '-slow' : ''}`;
    return { n, kind, slow, command: commandFor(kind, n), handle: sys.client.thread(threadId), children: [] };
  });
  const rootIds = threads.map((t) => t.handle.threadId);

  // ---- The kill: once a third of the roots have their first turn committed (the store's `slices` rows say so).
  let sent = 0;
  const kill = (async () => {
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      for (;;) {
        const { rows } = await db.query<{ n: number }>(
          'SELECT count(DISTINCT thread_id)::int AS n FROM slices WHERE thread_id = ANY($1)',
          [rootIds],
        );
        const committed = rows[0]!.n;
        if (committed >= THREADS / 3) {
          victim.child.kill('SIGKILL');
          const at = Date.now();
          await victim.exited;
          return { at, committed, sent };
        }
        if (Date.now() - started > WAIT_MS) throw new Error(`only ${committed} first turns committed`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await db.end();
    }
  })();
  kill.catch(() => undefined);

  // ---- Every thread gets its command (the user text starts it).
  await mapLimit(threads, SEND_CONCURRENCY, async (t) => {
    await sys.client.sendUserText(t.handle.threadId, t.command);
    sent++;
  });
  phaseDone('send');

  // ---- Each waits on the test: a tool result, its children's tools, or a subscription event.
  await mapLimit(threads, CHECK_CONCURRENCY, async (t) => {
    const id = t.handle.threadId;
    if (t.kind === 'tool') {
      const status = await t.handle.waitForIdle({ timeoutMs: WAIT_MS });
      expect(status, id).toMatchObject({
        status: 'waiting_tool',
        pendingCall: { name: 'wait_for_ci', passive: false },
      });
      t.callId = status.pendingCall!.id;
    } else {
      const status = await t.handle.waitForIdle({ settled: true, timeoutMs: WAIT_MS });
      expect(status, id).toMatchObject({ status: 'idle', pendingCall: null });
      if (t.kind === 'sub') {
        expect(Object.values(status.subscriptions), id).toEqual(['watch']);
        t.callId = Object.keys(status.subscriptions)[0]!;
      } else {
        expect(status.children, id).toHaveLength(2);
        for (const [i, childId] of status.children.entries()) {
          const child = await sys.client.thread(childId).waitForIdle({ timeoutMs: WAIT_MS });
          expect(child, childId).toMatchObject({ status: 'waiting_tool', pendingCall: { name: 'child_wait' } });
          const c: Child = { id: childId, label: i === 0 ? 'a' : 'b', callId: child.pendingCall!.id };
          t.children.push(c);
          expect(render(await sys.client.thread(childId).history()), childId).toEqual(childParked(t, c));
        }
      }
    }
    expect(render(await t.handle.history()), id).toEqual(parkedLines(t));
  });
  const killed = await kill;
  phaseDone('parked');

  // ---- After the kill: the results. A tree's second child gets its result once the first one's report is in.
  const deliverA = (t: Thread) => {
    const a = t.children[0]!;
    return sys.client.deliver(toolResult({ threadId: a.id, toolCallId: a.callId }, `ci passed a ${t.n}`));
  };
  await mapLimit(threads, SEND_CONCURRENCY, async (t) => {
    const ref = { threadId: t.handle.threadId, toolCallId: t.callId! };
    if (t.kind === 'tool') await t.handle.deliver(toolResult(ref, `Build ${t.n}: green`));
    if (t.kind === 'sub') await t.handle.deliver(subscriptionEvent(ref, `tick ${t.n}`));
    if (t.kind === 'tree') await deliverA(t);
  });

  phaseDone('deliver');

  // ---- Every thread finishes with its exact history and settles.
  await mapLimit(threads, CHECK_CONCURRENCY, async (t) => {
    const id = t.handle.threadId;
    const head = parkedLines(t).length;
    if (t.kind === 'tree') {
      await historyReaches(t.handle, head + 2);
      const b = t.children[1]!;
      await sys.client.deliver(toolResult({ threadId: b.id, toolCallId: b.callId }, `ci passed b ${t.n}`));
      await historyReaches(t.handle, head + 4);
    } else if (t.kind === 'sub') {
      await historyReaches(t.handle, head + 2);
    }
    const status = await t.handle.waitForIdle({ settled: true, timeoutMs: WAIT_MS });
    if (t.kind === 'sub') {
      expect(status.children, id).toHaveLength(1);
      t.eventChild = status.children[0]!;
      expect(render(await sys.client.thread(t.eventChild).history()), t.eventChild).toEqual(eventChildFinal(t));
    }
    const lines = finalLines(t);
    expect(render(await t.handle.history()), id).toEqual(lines);
    expect(status, id).toMatchObject({
      status: 'idle',
      pendingCall: null,
      historyLength: lines.length,
      queued: 0,
      deferred: 0,
      dropped: {},
      runs: 1,
    });
    for (const c of t.children) {
      const child = await sys.client.thread(c.id).waitForIdle({ settled: true, timeoutMs: WAIT_MS });
      expect(child, c.id).toMatchObject({ status: 'idle', pendingCall: null, queued: 0, dropped: {}, runs: 1 });
      expect(render(await sys.client.thread(c.id).history()), c.id).toEqual(childFinal(t, c));
    }
  });

  phaseDone('finish');

  // ---- The store holds exactly these threads' items: nothing lost, nothing twice, no other thread.
  const expected = new Map<string, number>();
  for (const t of threads) {
    expected.set(t.handle.threadId, finalLines(t).length);
    for (const c of t.children) expected.set(c.id, childFinal(t, c).length);
    if (t.eventChild) expected.set(t.eventChild, eventChildFinal(t).length);
  }
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const rows = await db
    .query<{ thread_id: string; n: number }>('SELECT thread_id, count(*)::int AS n FROM items GROUP BY thread_id')
    .finally(() => db.end());
  expect(new Map(rows.rows.map((r) => [r.thread_id, r.n]))).toEqual(expected);

  // ---- Temporal's record of every workflow: roots, tree children, event children.
  const workflowIds = [...expected.keys()];
  const histories = await mapLimit(workflowIds, CHECK_CONCURRENCY, async (id) => ({
    workflowId: id,
    events: (await sys.temporal.workflow.getHandle(id).fetchHistory()).events ?? [],
  }));
  phaseDone('histories');
  const tasksPerWorker: Record<string, number> = {};
  const firstTaskAt: Record<string, number> = {};
  const tasksBeforeKill: Record<string, number> = {};
  const failures: Record<string, number> = {};
  const nondeterministic: string[] = [];
  const takenOverBy: Record<string, number> = {};
  let movedFromVictim = 0;
  /** Workflows whose tasks more than one worker ran. */
  const onSeveralWorkers = new Set<string>();
  /** Workflow tasks that timed out, by kind: a dead worker's (START_TO_CLOSE), or left on a sticky queue (SCHEDULE_TO_START). */
  const workflowTaskTimeouts: Record<string, number> = {};
  const stickyTimeouts: Record<string, number> = {};
  /** Why slice attempts after the first were needed (the previous attempt's failure, as the retry records it). */
  const retriedBecause: Record<string, number> = {};
  const activities = { runSliceScheduled: 0, sliceAttemptsAfterFirst: 0, localSlices: 0, adoptScheduled: 0 };
  /** Activities that timed out, by activity type and kind of timeout (a dead worker's, here). */
  const activityTimeouts: Record<string, number> = {};
  for (const { workflowId, events } of histories) {
    const scheduled = new Map<string, string>();
    const who: string[] = [];
    for (const e of events) {
      const w = identity(e);
      if (w) {
        who.push(w);
        tasksPerWorker[w] = (tasksPerWorker[w] ?? 0) + 1;
        firstTaskAt[w] = Math.min(firstTaskAt[w] ?? Infinity, eventMs(e));
        if (eventMs(e) < killed.at) tasksBeforeKill[w] = (tasksBeforeKill[w] ?? 0) + 1;
      }
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) {
        const cause = proto.api.enums.v1.WorkflowTaskFailedCause[failed.cause ?? 0] ?? String(failed.cause);
        failures[cause] = (failures[cause] ?? 0) + 1;
        if (
          failed.cause === proto.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
        ) {
          nondeterministic.push(`${workflowId} event ${String(e.eventId)}: ${failed.failure?.message ?? ''}`);
        }
      }
      const wftTimeout = e.workflowTaskTimedOutEventAttributes;
      if (wftTimeout) {
        const kind = (proto.api.enums.v1.TimeoutType[wftTimeout.timeoutType ?? 0] ?? '?').replace('TIMEOUT_TYPE_', '');
        workflowTaskTimeouts[kind] = (workflowTaskTimeouts[kind] ?? 0) + 1;
        if (kind === 'SCHEDULE_TO_START') {
          // Left on the sticky queue of the worker that completed the workflow's previous task.
          const owner = `${who.at(-1) ?? '?'}${eventMs(e) < killed.at ? ' before kill' : ' after kill'}`;
          stickyTimeouts[owner] = (stickyTimeouts[owner] ?? 0) + 1;
        }
      }
      const act = e.activityTaskScheduledEventAttributes;
      if (act) {
        const type = act.activityType?.name ?? '';
        scheduled.set(String(e.eventId), type);
        if (type === 'adoptSlice') activities.adoptScheduled++;
        if (type === 'runSlice') activities.runSliceScheduled++;
      }
      const actStarted = e.activityTaskStartedEventAttributes;
      if ((actStarted?.attempt ?? 1) > 1) {
        activities.sliceAttemptsAfterFirst++;
        const why = actStarted!.lastFailure?.message ?? '?';
        retriedBecause[why] = (retriedBecause[why] ?? 0) + 1;
      }
      if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') activities.localSlices++;
      const timedOut = e.activityTaskTimedOutEventAttributes;
      if (timedOut) {
        const kind = proto.api.enums.v1.TimeoutType[timedOut.failure?.timeoutFailureInfo?.timeoutType ?? 0] ?? '?';
        const key = `${scheduled.get(String(timedOut.scheduledEventId)) ?? '?'}:${kind.replace('TIMEOUT_TYPE_', '')}`;
        activityTimeouts[key] = (activityTimeouts[key] ?? 0) + 1;
      }
    }
    // Each workflow's tasks and their workers: does a survivor run one after the killed worker ran one?
    const firstVictim = who.indexOf(VICTIM);
    if (firstVictim >= 0) {
      const after = new Set(who.slice(firstVictim + 1).filter((w) => w !== VICTIM));
      if (after.size > 0) movedFromVictim++;
      for (const w of after) takenOverBy[w] = (takenOverBy[w] ?? 0) + 1;
    }
    if (new Set(who).size > 1) onSeveralWorkers.add(workflowId);
    // Tree children stay open; event children closed themselves (completed); roots wait for more.
    const last = events.at(-1)!;
    const isEventChild = threads.some((t) => t.eventChild === workflowId);
    expect(Boolean(last.workflowExecutionCompletedEventAttributes), workflowId).toBe(isEventChild);
  }
  expect(nondeterministic).toEqual([]);
  // The kill caught work in flight: a workflow task or a slice activity of the dead worker had to time out.
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  expect(
    (workflowTaskTimeouts.START_TO_CLOSE ?? 0) + sum(activityTimeouts) + activities.sliceAttemptsAfterFirst,
  ).toBeGreaterThan(0);
  expect(Object.keys(tasksPerWorker).sort()).toEqual(WORKER_IDS);
  // All three ran workflow tasks before the kill.
  for (const w of WORKER_IDS) expect(firstTaskAt[w], `${w}'s first task before the kill`).toBeLessThan(killed.at);
  // The survivors ran later tasks of threads whose earlier tasks the killed worker ran: each of them did.
  expect(movedFromVictim).toBeGreaterThan(0);
  for (const w of WORKER_IDS.filter((w) => w !== VICTIM))
    expect(takenOverBy[w] ?? 0, `threads ${w} took over`).toBeGreaterThan(0);

  // Each history that went from one worker to another replays to its end in a fresh worker too (all 1,000 would take
  // ~50 s here; the others were written by one worker from start to end).
  const replayErrors: string[] = [];
  const replays = Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'many-workers' },
    histories
      .filter((h) => onSeveralWorkers.has(h.workflowId))
      .map((h) => ({ workflowId: h.workflowId, history: { events: h.events } })),
  );
  for await (const r of replays) if (r.error) replayErrors.push(`${r.workflowId}: ${String(r.error)}`);
  expect(replayErrors).toEqual([]);
  phaseDone('replay');

  const sliceErrors = workers.flatMap((w) =>
    w.lines.filter((l) => l.startsWith('SLICE-ERROR')).map((l) => `${w.identity} ${l}`),
  );
  console.log(
    JSON.stringify({
      threads: THREADS,
      workflows: workflowIds.length,
      workers: WORKER_IDS.length,
      killed: VICTIM,
      killedAfterMs: killed.at - started,
      firstTurnsCommittedAtKill: killed.committed,
      sentAtKill: killed.sent,
      tasksPerWorker,
      tasksBeforeKill,
      threadsMovedFromKilled: movedFromVictim,
      takenOverBy,
      workflowsOnSeveralWorkers: onSeveralWorkers.size,
      workflowTaskTimeouts,
      stickyTimeouts,
      activityTimeouts,
      retriedBecause,
      ...activities,
      localSliceBudgetMs: LOCAL_SLICE_BUDGET_MS ?? 'default',
      workflowTaskFailures: failures,
      sliceErrors: sliceErrors.length,
      phasesMs: phases,
      wallMs: Date.now() - started,
    }),
  );
  if (sliceErrors.length > 0) console.log(sliceErrors.slice(0, 10).join('\n'));
}, 420_000);
