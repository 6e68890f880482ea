/**
 * A deploy from a release before the window (decision 85) with real processes: build A (the frozen v0.1 workflow
 * bundle) parks 50 threads in every kind of wait — a tool result pending, a `sleep` timer,
 * `sleep_until_event_or_input`, an open subscription, a spawned child waiting on its own tool — and is killed. This
 * release does not replay 0.1's runs, so the deploy goes through the bridge, as docs/upgrading.md tells a user on 0.1
 * to do: a build of release 0.12 (its frozen bundle) takes the task queue and store, `migrate` moves every thread onto
 * a run of its own, and it goes. Build B (this checkout's bundle) then takes over; the results, events and wake-ups
 * arrive there. Every thread ends with its exact committed history and no workflow task of any run failed; each old
 * run ends in the bridge's continue-as-new (its one marker is 0.12's, the `migrate` patch), and each new run records
 * 0.11's marker once, at its first turn.
 *
 * Then a rollback within the window: B goes and the bridge comes back. A run B continued as new (no marker yet) and a
 * run B woke (0.11's marker) both go on there without a failed task — this release issues the commands 0.12 does, and
 * asks 0.11's patch where 0.12 does — and again on B once it is back. See docs/upgrading.md.
 */
import type { ChildProcess } from 'node:child_process';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, expect, inject, it } from 'vitest';
import { AgentClient } from '../../src/client/agent-client';
import type { ThreadHandle } from '../../src/client/thread-handle';
import * as Sleep from '../../src/core/builtins/sleep';
import * as Threads from '../../src/core/builtins/threads';
import * as T from '../../src/core/texts';
import { ScriptedModel } from '../../src/model/scripted';
import { subscriptionEvent, toolResult } from '../../src/tools/messages';
import { V011, V012 } from '../../src/workflows/patches';
import { workerProcess } from '../bundle-workers';
import { BRIDGE, eventually, releaseBundle, render, startTestSystem, type TestSystem, uid } from '../helpers';

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

const V01_BUNDLE = releaseBundle('v0.1');
const BRIDGE_BUNDLE = releaseBundle(BRIDGE);
/**
 * Long enough that no sleeper wakes before B runs (parking the rest, stopping A, the bridge's sweep and stopping it take
 * a while under load), short enough to fire while B finishes the others. A sleeper that woke earlier fails the checks
 * of its new run, loudly.
 */
const SLEEP_SECONDS = 30;

let sys: TestSystem;
const procs: ChildProcess[] = [];

beforeAll(async () => {
  // The test process runs no worker: builds A and B are processes of their own; it only delivers and reads.
  sys = await startTestSystem({ model: new ScriptedModel(() => ({ text: 'unused' })), noWorker: true });
});
afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});
afterAll(async () => {
  await sys?.shutdown();
});

interface Build {
  child: ChildProcess;
  /** Stops the process as a deploy does: SIGTERM, SIGKILL if it lingers. Resolves once it is gone. */
  stop(): Promise<void>;
}

/** Starts a worker process of build `name` running `bundle`; resolves once it polls the task queue. */
async function startBuild(name: 'A' | 'bridge' | 'B', bundle: string): Promise<Build> {
  const build = await workerProcess({ taskQueue: sys.taskQueue, storePath: sys.storePath, bundle, build: name });
  procs.push(build.child);
  return build;
}

/** Every run of a workflow, oldest first, from visibility (which may lag: waits until it lists the current run). */
async function runsOf(client: Client, workflowId: string): Promise<{ runId: string; status: string }[]> {
  const current = (await client.workflow.getHandle(workflowId).describe()).runId;
  return eventually(
    async () => {
      const runs = [];
      for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(w);
      runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
      return runs.some((r) => r.runId === current)
        ? runs.map((r) => ({ runId: r.runId, status: r.status.name }))
        : undefined;
    },
    30_000,
    `the runs of ${workflowId} in visibility`,
  );
}

interface Run {
  workflowId: string;
  runId: string;
  status: string;
  events: HistoryEvent[];
}

async function historiesOf(client: Client, workflowId: string): Promise<Run[]> {
  const runs = await runsOf(client, workflowId);
  return Promise.all(
    runs.map(async (r) => ({
      workflowId,
      ...r,
      events: (await client.workflow.getHandle(workflowId, r.runId).fetchHistory()).events ?? [],
    })),
  );
}

const identity = (e: HistoryEvent) => e.workflowTaskCompletedEventAttributes?.identity ?? undefined;

/** The id of a `patched()` marker (Temporal core records `core_patch`, details `patch-data`: `{ id, deprecated }`), else undefined. */
function patchId(e: HistoryEvent): string | undefined {
  const m = e.markerRecordedEventAttributes;
  if (m?.markerName !== 'core_patch') return undefined;
  const payload = m.details?.['patch-data']?.payloads?.[0];
  return payload ? (defaultPayloadConverter.fromPayload(payload) as { id: string }).id : undefined;
}

/** Every workflow task failure of the runs, one readable line each. */
const taskFailures = (runs: Run[]) =>
  runs.flatMap((r) =>
    r.events
      .filter((e) => e.workflowTaskFailedEventAttributes)
      .map(
        (e) =>
          `${r.workflowId}/${r.runId} event ${String(e.eventId)}: ${e.workflowTaskFailedEventAttributes!.failure?.message ?? ''}`,
      ),
  );

/** The patch ids of a run's markers, in order. */
const markers = (run: Run) => run.events.map(patchId).filter((id): id is string => id !== undefined);

/**
 * For a thread born on A: its first run holds A's workflow tasks, then the bridge's, and ends in the bridge's
 * continue-as-new with 0.12's marker its only one; its next run holds the bridge's tasks, then B's, with 0.11's marker
 * its only one (recorded at its first turn, B's when nothing woke it earlier). Undefined when so, else what is not.
 */
function movedThroughBridge(runs: Run[]): string | undefined {
  const [old, moved, ...later] = runs;
  const id = runs[0]?.workflowId;
  if (!old || !moved) return `${id}: ${runs.length} run(s), not moved`;
  if (later.length > 0) return `${id}: ${runs.length} runs`;
  const order = (run: Run, builds: string[]) => {
    const who = run.events.map(identity).filter((w): w is string => w !== undefined);
    const ranks = who.map((w) => builds.indexOf(w));
    return ranks.every((r, i) => r >= 0 && (i === 0 || r >= ranks[i - 1]!)) ? undefined : who.join(',');
  };
  const oldOrder = order(old, ['build-A', 'build-bridge']);
  if (oldOrder) return `${id}: the old run's tasks are not A's then the bridge's: ${oldOrder}`;
  if (old.status !== 'CONTINUED_AS_NEW') return `${id}: the old run is ${old.status}`;
  if (markers(old).join(',') !== V012) return `${id}: the old run's markers: ${markers(old).join(',')}`;
  const newOrder = order(moved, ['build-bridge', 'build-B']);
  if (newOrder) return `${id}: the new run's tasks are not the bridge's then B's: ${newOrder}`;
  if (!moved.events.some((e) => identity(e) === 'build-B')) return `${id}: B ran no task of the new run`;
  if (markers(moved).join(',') !== V011) return `${id}: the new run's markers: ${markers(moved).join(',')}`;
  return undefined;
}

type Kind = 'tool' | 'sleep' | 'sleep-until-input' | 'subscribed' | 'parent';
interface Parked {
  kind: Kind;
  n: number;
  thread: ThreadHandle;
  command: string;
  /** The call the thread (or for `parent`, its child) waits on. */
  callId?: string;
  childId?: string;
}

/** What each kind of thread is told, in the tree-script's command language. */
const commandFor = (kind: Kind, n: number): string =>
  ({
    tool: `call wait_for_ci {"build":${n}}`,
    sleep: `call sleep {"seconds":${SLEEP_SECONDS}}`,
    'sleep-until-input': 'call sleep_until_event_or_input {}',
    subscribed: `call watch {"topic":"t${n}"}`,
    parent: `spawn wait:done ${n}`,
  })[kind];

const MIX: [Kind, number][] = [
  ['tool', 14],
  ['subscribed', 12],
  ['parent', 14],
  ['sleep-until-input', 4],
  // Last, so their timers start last and fire after A is gone.
  ['sleep', 6],
];

/** The committed history each thread must have once parked on A. */
function parkedLines(p: Parked): string[] {
  const user = `user: ${p.command}`;
  switch (p.kind) {
    case 'tool':
      return [user, `call #1 wait_for_ci {"build":${p.n}}`];
    case 'sleep':
      return [user, `call #1 sleep {"seconds":${SLEEP_SECONDS}}`];
    case 'sleep-until-input':
      return [user, 'call #1 sleep_until_event_or_input {}'];
    case 'subscribed':
      return [user, `call #1 watch {"topic":"t${p.n}"}`, 'result #1: watching', 'assistant: ok: watching'];
    case 'parent':
      return [
        user,
        `call #1 spawn_thread {"instructions":"wait:done ${p.n}","child_of":["${p.thread.threadId}"]}`,
        `result #1: ${Threads.childSpawned(p.childId!)}`,
        'assistant: waiting',
      ];
  }
}

const childLines = (p: Parked) => [
  `result #1: ${Threads.childSeed(p.childId!, `wait:done ${p.n}`)}`,
  'call #2 child_wait {}',
];

/**
 * The deploy: build A (0.1) parks 50 threads in every kind of wait, plus the two of the rollback half, and goes; the
 * bridge (0.12) moves them all and goes; build B (this checkout) finishes them all with exact histories. Temporal's
 * record: no workflow task failed, and each thread moved through the bridge ({@link movedThroughBridge}).
 */
async function parkOnAMoveFinishOnB() {
  const temporal = sys.temporal;
  // Threads for the rollback half: `viaCan` continues-as-new early on B (v0.1 ignores maxRunEvents).
  const canClient = new AgentClient({
    client: temporal,
    taskQueue: sys.taskQueue,
    store: sys.store,
    threadOptions: { maxRunEvents: 30 },
  });

  // ---- Build A parks 50 threads, and first the two of the rollback half (waiting on a tool too).
  const a = await startBuild('A', V01_BUNDLE);
  const viaCan = await canClient.startThread({ threadId: uid('up-can') });
  await viaCan.sendUserText('call wait_for_ci {"build":101}');
  const touched = await sys.client.startThread({ threadId: uid('up-touched') });
  await touched.sendUserText('call wait_for_ci {"build":102}');
  const canCall = (await viaCan.waitForIdle()).pendingCall!;
  const touchedCall = (await touched.waitForIdle()).pendingCall!;
  const parked: Parked[] = [];
  const park = async (kind: Kind, n: number) => {
    const thread = await sys.client.startThread({ threadId: uid(`up-${kind}`) });
    const p: Parked = { kind, n, thread, command: commandFor(kind, n) };
    await thread.sendUserText(p.command);
    parked.push(p);
    return p;
  };
  const waitParked = async (p: Parked) => {
    // Settled, except for a pending tool: an unsettled wait can end while a spawn starts its child (nothing queued).
    const status = await p.thread.waitForIdle({ settled: p.kind !== 'tool' });
    if (p.kind === 'parent') {
      expect(status).toMatchObject({ status: 'idle', children: [expect.any(String)] });
      p.childId = status.children[0]!;
      const child = await sys.client.thread(p.childId).waitForIdle();
      expect(child).toMatchObject({ status: 'waiting_tool', pendingCall: { name: 'child_wait' } });
      p.callId = child.pendingCall!.id;
      expect(render(await sys.client.thread(p.childId).history())).toEqual(childLines(p));
    } else if (p.kind === 'subscribed') {
      expect(status).toMatchObject({ status: 'idle', pendingCall: null });
      expect(Object.values(status.subscriptions)).toEqual(['watch']);
      p.callId = Object.keys(status.subscriptions)[0]!;
    } else {
      const call = {
        tool: { name: 'wait_for_ci', passive: false },
        sleep: { name: 'sleep', passive: true },
        'sleep-until-input': { name: 'sleep_until_event_or_input', passive: true },
      }[p.kind];
      expect(status).toMatchObject({ status: 'waiting_tool', pendingCall: call });
      p.callId = status.pendingCall!.id;
    }
    expect(render(await p.thread.history())).toEqual(parkedLines(p));
  };
  let n = 0;
  for (const [kind, count] of MIX) {
    const batch = await Promise.all(Array.from({ length: count }, () => park(kind, ++n)));
    await Promise.all(batch.map(waitParked));
  }
  expect(parked).toHaveLength(50);

  // ---- The deploy: A goes away while everything waits; the bridge starts on the same task queue and store, moves every
  // thread onto a run of its own, and goes. Then B starts.
  await a.stop();
  const waiting = [
    viaCan.threadId,
    touched.threadId,
    ...parked.map((p) => p.thread.threadId),
    ...parked.filter((p) => p.kind === 'parent').map((p) => p.childId!),
  ];
  const before = new Date();
  const bridge = await startBuild('bridge', BRIDGE_BUNDLE);
  await eventually(
    async () =>
      (await sys.client.migrateThreads({ before, threadIds: waiting, dryRun: true })).found === waiting.length ||
      undefined,
    30_000,
    'every waiting thread listed',
  );
  const sweep = await sys.client.migrateThreads({ before, threadIds: waiting });
  expect(sweep.threads.filter((t) => t.outcome !== 'moved')).toEqual([]);
  expect(sweep).toMatchObject({ moved: waiting.length, complete: true });
  await bridge.stop();
  // The tool results arrive while no worker runs at all: they wait in Temporal. The rest once B polls.
  const tools = parked.filter((p) => p.kind === 'tool');
  await Promise.all(
    tools.map((p) =>
      p.thread.deliver(toolResult({ threadId: p.thread.threadId, toolCallId: p.callId! }, `Build ${p.n}: green`)),
    ),
  );
  const b = await startBuild('B', inject('workflowBundlePath'));
  await Promise.all(
    parked.map(async (p) => {
      if (p.kind === 'parent')
        await sys.client.deliver(toolResult({ threadId: p.childId!, toolCallId: p.callId! }, 'ci passed'));
      if (p.kind === 'subscribed')
        await p.thread.deliver(
          subscriptionEvent({ threadId: p.thread.threadId, toolCallId: p.callId! }, `tick ${p.n}`),
        );
      if (p.kind === 'sleep-until-input') await p.thread.sendUserText(`wake up ${p.n}`);
    }),
  );
  await viaCan.deliver(toolResult({ threadId: viaCan.threadId, toolCallId: canCall.id }, 'Build 101: green'));
  await touched.deliver(toolResult({ threadId: touched.threadId, toolCallId: touchedCall.id }, 'Build 102: green'));

  // ---- All 50 finish on B with exact histories.
  const eventChildren: { parent: Parked; childId: string }[] = [];
  const finishedLines = async (p: Parked): Promise<string[]> => {
    const head = parkedLines(p);
    switch (p.kind) {
      case 'tool':
        return [...head, `result #1: Build ${p.n}: green`, `assistant: ok: Build ${p.n}: green`];
      case 'sleep':
        return [...head, `result #1: ${Sleep.slept(SLEEP_SECONDS)}`, `assistant: ok: ${Sleep.slept(SLEEP_SECONDS)}`];
      case 'sleep-until-input':
        return [...head, `result #1: ${T.INTERRUPTED_RESULT}`, `user: wake up ${p.n}`, `assistant: ok: wake up ${p.n}`];
      case 'parent': {
        const report = Threads.reportFromChild(`done ${p.n}`);
        return [...head, `event #1: ${report}`, `assistant: noted: ${report}`];
      }
      case 'subscribed': {
        const { children } = await p.thread.status();
        expect(children).toHaveLength(1);
        const childId = children[0]!;
        eventChildren.push({ parent: p, childId });
        const report = Threads.eventChildClosed(p.callId!, childId, `processed tick ${p.n}`);
        return [...head, `event #1: ${report}`, `assistant: noted: ${report}`];
      }
    }
  };
  await Promise.all(
    parked.map(async (p) => {
      // Parents and subscribers hear from a child first: wait for their last line, then for the thread to settle.
      const finalLength = parkedLines(p).length + (p.kind === 'sleep-until-input' ? 3 : 2);
      await eventually(
        async () => (await p.thread.history()).length >= finalLength,
        60_000,
        `${p.thread.threadId} to finish`,
      );
      await p.thread.waitForIdle({ settled: true });
      expect(render(await p.thread.history()), p.thread.threadId).toEqual(await finishedLines(p));
    }),
  );
  for (const p of parked.filter((p) => p.kind === 'parent')) {
    const child = sys.client.thread(p.childId!);
    await child.waitForIdle({ settled: true });
    expect(render(await child.history())).toEqual([
      ...childLines(p),
      'result #2: ci passed',
      `call #3 report_to_parent {"report":"done ${p.n}"}`,
      `result #3: ${Threads.REPORT_SENT}`,
      'assistant: child done',
    ]);
  }
  for (const { parent, childId } of eventChildren) {
    // Event children closed themselves; their report is in the parent already.
    expect(render(await sys.client.thread(childId).history())).toEqual([
      `call #1 spawn_thread {"instructions":"${Threads.EVENT_CHILD_SPAWN_INSTRUCTIONS}"}`,
      `result #1: ${Threads.eventChildSeed(childId, parent.thread.threadId)}`,
      `call #2 receive_event__injected {"original_args":{"topic":"t${parent.n}"},"original_tool_call_id":"${parent.callId}","original_tool_name":"watch"}`,
      `result #2: tick ${parent.n}`,
      `call #3 close_thread {"thread_id":"${childId}","report_to_parent":"processed tick ${parent.n}"}`,
    ]);
  }

  // ---- Temporal's record: every run of every thread (roots, children, event children).
  const bornOnA = [
    ...parked.map((p) => p.thread.threadId),
    ...parked.filter((p) => p.kind === 'parent').map((p) => p.childId!),
  ];
  const bornOnB = eventChildren.map((e) => e.childId);
  const runs = (await Promise.all([...bornOnA, ...bornOnB].map((id) => historiesOf(temporal, id)))).flat();
  expect(runs.length).toBeGreaterThanOrEqual(bornOnA.length + bornOnB.length);
  // Failures only: a task that A's sticky queue held when A went away times out (SCHEDULE_TO_START) and moves to the
  // shared queue. That is how Temporal notices a lost worker, and nothing the workflow code did.
  expect(taskFailures(runs)).toEqual([]);
  // Only these ends are normal: still waiting (roots, open children), closed children, or continued.
  expect(
    runs
      .filter((r) => !['RUNNING', 'COMPLETED', 'CONTINUED_AS_NEW'].includes(r.status))
      .map((r) => `${r.workflowId}: ${r.status}`),
  ).toEqual([]);
  expect(bornOnA.map((id) => movedThroughBridge(runs.filter((r) => r.workflowId === id))).filter(Boolean)).toEqual([]);
  for (const r of runs.filter((r) => bornOnB.includes(r.workflowId))) {
    expect(r.events.filter(identity).every((e) => identity(e) === 'build-B')).toBe(true);
    // A run B started follows 0.11's rules: its one marker is 0.11's (decision 79).
    expect(markers(r)).toEqual([V011]);
  }
  // A later B process (a restart, a cache eviction) replays every run it went on with to its end without
  // nondeterminism: the bridge's and its own (a run of 0.1 is outside its window: the bridge moved them all).
  const current = runs.filter((r) => r.status !== 'CONTINUED_AS_NEW');
  expect(current.length).toBe(bornOnA.length + bornOnB.length);
  const replays = Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'upgraded' },
    current.map((r) => ({ workflowId: r.workflowId, history: { events: r.events } })),
  );
  const replayErrors: string[] = [];
  for await (const r of replays) if (r.error) replayErrors.push(`${r.workflowId}: ${String(r.error)}`);
  expect(replayErrors).toEqual([]);
  return { temporal, viaCan, touched, b };
}

it('parks 50 threads on build A (v0.1), moves them with the bridge (0.12), finishes them on build B (this release), and rolls back to the bridge and forward again', async () => {
  const parked = await parkOnAMoveFinishOnB();
  const { temporal, viaCan, touched } = parked;
  let b = parked.b;

  // ---- Rollback, prepared on B. `viaCan` gets texts until B continues its run as new (maxRunEvents).
  await viaCan.waitForIdle({ settled: true });
  const canLines = [
    'user: call wait_for_ci {"build":101}',
    'call #1 wait_for_ci {"build":101}',
    'result #1: Build 101: green',
    'assistant: ok: Build 101: green',
  ];
  const runsBefore = (await historiesOf(temporal, viaCan.threadId)).length;
  for (let i = 1; (await historiesOf(temporal, viaCan.threadId)).length <= runsBefore; i++) {
    expect(i, 'turns before B continues the run as new').toBeLessThan(10);
    await viaCan.sendUserText(`more ${i}`);
    await viaCan.waitForIdle({ settled: true });
    canLines.push(`user: more ${i}`, `assistant: ok: more ${i}`);
  }
  const canRuns = await historiesOf(temporal, viaCan.threadId);
  const bRun = canRuns.at(-1)!;
  expect(bRun.status).toBe('RUNNING');
  // B started the new run and only answered waits in it since (updates): no marker in it yet.
  const bRunTasks = bRun.events.filter(identity).map(identity);
  expect(bRunTasks.length).toBeGreaterThan(0);
  expect(bRunTasks.every((w) => w === 'build-B')).toBe(true);
  expect(markers(bRun)).toEqual([]);
  // `touched` was woken by B in the run the bridge started: 0.11's marker is in the run the bridge would replay.
  await touched.waitForIdle({ settled: true });
  const touchedLines = [
    'user: call wait_for_ci {"build":102}',
    'call #1 wait_for_ci {"build":102}',
    'result #1: Build 102: green',
    'assistant: ok: Build 102: green',
  ];
  expect(render(await touched.history())).toEqual(touchedLines);
  const touchedRun = (await historiesOf(temporal, touched.threadId)).at(-1)!;
  expect(markers(touchedRun)).toEqual([V011]);

  // The SDK's own verdict, in this process: the window's older releases replay both runs as B wrote them.
  for (const release of ['v0.11', BRIDGE]) {
    const options = { workflowBundle: { codePath: releaseBundle(release) }, replayName: `${release} on B's runs` };
    await Worker.runReplayHistory(options, { events: bRun.events }, viaCan.threadId);
    await Worker.runReplayHistory(options, { events: touchedRun.events }, touched.threadId);
  }

  // ---- The rollback: B goes, the bridge comes back; both threads go on there, no task fails.
  await b.stop();
  const bridge = await startBuild('bridge', BRIDGE_BUNDLE);
  await viaCan.sendUserText('after rollback');
  await touched.sendUserText('after rollback');
  for (const t of [viaCan, touched]) await t.waitForIdle({ settled: true });
  canLines.push('user: after rollback', 'assistant: ok: after rollback');
  touchedLines.push('user: after rollback', 'assistant: ok: after rollback');
  expect(render(await viaCan.history())).toEqual(canLines);
  expect(render(await touched.history())).toEqual(touchedLines);
  for (const t of [viaCan, touched]) {
    const after = await historiesOf(temporal, t.threadId);
    expect(taskFailures(after)).toEqual([]);
    // The same run, B's tasks then the bridge's: the bridge replayed what B wrote and went on from there.
    const tasks = after.at(-1)!.events.filter(identity).map(identity);
    const afterB = tasks.slice(tasks.lastIndexOf('build-B') + 1);
    expect(tasks).toContain('build-B');
    expect(afterB.length).toBeGreaterThan(0);
    expect(afterB.every((w) => w === 'build-bridge')).toBe(true);
  }

  // ---- Forward again: B serves them, and they go on.
  await bridge.stop();
  b = await startBuild('B', inject('workflowBundlePath'));
  for (const t of [viaCan, touched]) {
    await t.sendUserText('forward again');
    await t.waitForIdle({ settled: true, timeoutMs: 60_000 });
    expect(taskFailures(await historiesOf(temporal, t.threadId))).toEqual([]);
  }
  expect(render(await viaCan.history())).toEqual([...canLines, 'user: forward again', 'assistant: ok: forward again']);
  expect(render(await touched.history())).toEqual([
    ...touchedLines,
    'user: forward again',
    'assistant: ok: forward again',
  ]);
  await b.stop();
}, 360_000);
