/**
 * A rolling deploy with real processes: build A (the frozen v0.1 workflow bundle) parks 50 threads in every kind of
 * wait — a tool result pending, a `sleep` timer, `sleep_until_event_or_input`, an open subscription, a spawned child
 * waiting on its own tool — and is killed. Build B (this checkout's bundle) takes over the same task queue and store;
 * the results, events and wake-ups arrive there. Every thread ends with its exact committed history, no workflow task
 * of any run failed, and each thread switched to the current rules (the `infinity-v0.3` patch marker, which implies
 * 0.2's too) at the first thing B did for it.
 *
 * Then the other way (a rollback to A): a run that B continued-as-new (carried state version 2, no marker) keeps
 * working on A; a run in which B recorded the marker cannot be replayed by A — Temporal fails its workflow task as
 * nondeterministic and the thread is stuck until a build with the patch serves it again (it then finishes, nothing
 * lost). B records the marker in the first task it runs for any thread, so once 0.3 has run, workflow code must not
 * go back below 0.3 for the threads it woke: roll forward with a fix, or keep a 0.3 build serving them (PINNED to it
 * under Worker Versioning; AUTO_UPGRADE threads would follow a rollback and fail). See docs/upgrading.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
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
import { V011, V02, V03 } from '../../src/workflows/patches';
import { CARRIED_STATE_VERSION, type ThreadWorkflowArgs } from '../../src/workflows/contract';
import { eventually, render, startTestSystem, type TestSystem, uid } from '../helpers';

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

const V01_BUNDLE = join(__dirname, '..', 'fixtures', 'bundles', 'v0.1', 'workflows-bundle.js');
const V02_BUNDLE = join(__dirname, '..', 'fixtures', 'bundles', 'v0.2', 'workflows-bundle.js');
/**
 * Long enough that no sleeper wakes while build A still runs (parking the rest and stopping A take a few seconds),
 * short enough to fire while B finishes the others. A sleeper that woke on A fails the "woke on B" check, loudly.
 */
const SLEEP_SECONDS = 8;

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
async function startBuild(name: 'A' | 'B', bundle: string): Promise<Build> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'fixtures', 'upgrade-worker.ts')], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: sys.taskQueue,
      STORE_PATH: sys.storePath,
      BUNDLE_PATH: bundle,
      BUILD: name,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  procs.push(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/^READY$/m.test(out)) resolve();
    });
    void exited.then(() => reject(new Error(`build ${name} exited before it was ready: ${out}`)));
  });
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
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

/** Events that a workflow task's commands produce: the first of them after a task is the first thing it did. */
const isCommandEvent = (e: HistoryEvent) =>
  Boolean(
    e.markerRecordedEventAttributes ||
    e.activityTaskScheduledEventAttributes ||
    e.timerStartedEventAttributes ||
    e.startChildWorkflowExecutionInitiatedEventAttributes ||
    e.signalExternalWorkflowExecutionInitiatedEventAttributes ||
    e.upsertWorkflowSearchAttributesEventAttributes ||
    e.workflowPropertiesModifiedEventAttributes ||
    e.workflowExecutionCompletedEventAttributes ||
    e.workflowExecutionContinuedAsNewEventAttributes,
  );

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

/**
 * For a thread born on A and woken on B (one run): the workflow tasks before B's first are all A's and record only A's
 * own markers; from B's first on, all are B's, and the first command B issued is the `infinity-v0.3` marker.
 */
function switchedToCurrent(run: Run, aPatches: readonly string[]): string | undefined {
  const tasks = run.events.map((e, i) => ({ i, who: identity(e) })).filter((t) => t.who !== undefined);
  const firstB = tasks.find((t) => t.who === 'build-B');
  if (!firstB) return `${run.workflowId}: no workflow task ran on build B (woke on A?)`;
  if (tasks.some((t) => (t.i < firstB.i ? t.who !== 'build-A' : t.who !== 'build-B')))
    return `${run.workflowId}: builds interleave: ${tasks.map((t) => t.who).join(',')}`;
  const foreign = run.events
    .slice(0, firstB.i)
    .map(patchId)
    .find((id) => id !== undefined && !aPatches.includes(id));
  if (foreign) return `${run.workflowId}: a patch marker build A does not know in A's part: ${foreign}`;
  const first = run.events.slice(firstB.i + 1).find(isCommandEvent);
  if (!first || patchId(first) !== V03) return `${run.workflowId}: B's first command is not the ${V03} marker`;
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
 * The deploy: build A (`aBundle`) parks 50 threads in every kind of wait, plus the two of the rollback half, and goes;
 * build B (this checkout) finishes them all with exact histories. Temporal's record: no workflow task failed, A's part
 * of a run holds only `aPatches` markers, and the first thing B did for each thread was this release's marker.
 */
async function parkOnAFinishOnB(aBundle: string, aPatches: readonly string[]) {
  const temporal = sys.temporal;
  // Threads for the rollback half: `viaCan` continues-as-new early under 0.2 rules (v0.1 ignores maxRunEvents).
  const canClient = new AgentClient({
    client: temporal,
    taskQueue: sys.taskQueue,
    store: sys.store,
    threadOptions: { maxRunEvents: 30 },
  });

  // ---- Build A parks 50 threads, and first the two of the rollback half (waiting on a tool too).
  const a = await startBuild('A', aBundle);
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

  // ---- The deploy: A goes away while everything waits; B starts on the same task queue and store.
  await a.stop();
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
  expect(
    runs
      .filter((r) => bornOnA.includes(r.workflowId))
      .map((r) => switchedToCurrent(r, aPatches))
      .filter(Boolean),
  ).toEqual([]);
  for (const r of runs.filter((r) => bornOnB.includes(r.workflowId))) {
    expect(r.events.filter(identity).every((e) => identity(e) === 'build-B')).toBe(true);
    // A run B started follows 0.11's rules: its one marker is 0.11's (decision 79).
    expect(r.events.map(patchId).filter(Boolean)).toEqual([V011]);
  }
  // A later B process (a restart, a cache eviction) replays every upgraded run to its end without nondeterminism.
  const replays = Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'upgraded' },
    runs.map((r) => ({ workflowId: r.workflowId, history: { events: r.events } })),
  );
  const replayErrors: string[] = [];
  for await (const r of replays) if (r.error) replayErrors.push(`${r.workflowId}: ${String(r.error)}`);
  expect(replayErrors).toEqual([]);
  return { temporal, viaCan, touched, b };
}

it('parks 50 threads on build A (release 0.2) and finishes them on build B (this release)', async () => {
  const { b } = await parkOnAFinishOnB(V02_BUNDLE, [V02]);
  await b.stop();
}, 240_000);

it('parks 50 threads on build A (v0.1), finishes them on build B (this release), and tells what a rollback to A does', async () => {
  const parked = await parkOnAFinishOnB(V01_BUNDLE, []);
  const { temporal, viaCan, touched } = parked;
  let b = parked.b;

  // ---- Rollback, prepared on B. `viaCan` gets texts until B continues its run as new (0.2: maxRunEvents).
  await viaCan.waitForIdle({ settled: true });
  const canLines = [
    'user: call wait_for_ci {"build":101}',
    'call #1 wait_for_ci {"build":101}',
    'result #1: Build 101: green',
    'assistant: ok: Build 101: green',
  ];
  for (let i = 1; (await viaCan.status()).runs < 2; i++) {
    expect(i, 'turns before B continues the run as new').toBeLessThan(10);
    await viaCan.sendUserText(`more ${i}`);
    await viaCan.waitForIdle({ settled: true });
    canLines.push(`user: more ${i}`, `assistant: ok: more ${i}`);
  }
  const canRuns = await historiesOf(temporal, viaCan.threadId);
  expect(canRuns.map((r) => r.status)).toEqual(['CONTINUED_AS_NEW', 'RUNNING']);
  const run2 = canRuns[1]!;
  const started = run2.events[0]!.workflowExecutionStartedEventAttributes!;
  const run2Args = defaultPayloadConverter.fromPayload(started.input!.payloads![0]!) as ThreadWorkflowArgs;
  expect(run2Args.carried?.version).toBe(CARRIED_STATE_VERSION);
  // B started the new run and only answered waits in it since (updates): no marker in it yet.
  const run2Tasks = run2.events.filter(identity).map(identity);
  expect(run2Tasks.length).toBeGreaterThan(0);
  expect(run2Tasks.every((w) => w === 'build-B')).toBe(true);
  expect(run2.events.some((e) => patchId(e) !== undefined)).toBe(false);
  // `touched` was woken by B in its first run: the marker is in the run A would have to replay.
  await touched.waitForIdle({ settled: true });
  const touchedLines = [
    'user: call wait_for_ci {"build":102}',
    'call #1 wait_for_ci {"build":102}',
    'result #1: Build 102: green',
    'assistant: ok: Build 102: green',
  ];
  expect(render(await touched.history())).toEqual(touchedLines);
  const touchedRun = (await historiesOf(temporal, touched.threadId))[0]!;
  expect(touchedRun.events.some((e) => patchId(e) === V03)).toBe(true);

  // The SDK's own verdict, in this process: v0.1 code replays the continued run, and fails on the marked one.
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: V01_BUNDLE }, replayName: 'v0.1 on a run B continued' },
    { events: run2.events },
    viaCan.threadId,
  );
  const v01OnMarked = await Worker.runReplayHistory(
    { workflowBundle: { codePath: V01_BUNDLE }, replayName: 'v0.1 on a run B marked' },
    { events: touchedRun.events },
    touched.threadId,
  ).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(v01OnMarked?.name).toBe('DeterminismViolationError');
  expect(v01OnMarked?.message).toContain(`Non-deprecated patch marker encountered for change ${V03}`);

  // ---- The rollback: B goes, A comes back.
  await b.stop();
  const a = await startBuild('A', V01_BUNDLE);
  await viaCan.sendUserText('after rollback');
  await viaCan.waitForIdle({ settled: true });
  canLines.push('user: after rollback', 'assistant: ok: after rollback');
  expect(render(await viaCan.history())).toEqual(canLines);
  const canAfter = await historiesOf(temporal, viaCan.threadId);
  expect(taskFailures(canAfter)).toEqual([]);
  // The same run, B's tasks then A's: A replayed what B wrote and went on from there.
  const afterTasks = canAfter[1]!.events.filter(identity).map(identity);
  expect(afterTasks.slice(0, run2Tasks.length)).toEqual(run2Tasks);
  expect(afterTasks.length).toBeGreaterThan(run2Tasks.length);
  expect(afterTasks.slice(run2Tasks.length).every((w) => w === 'build-A')).toBe(true);

  // The marked run: A's workflow task fails as nondeterministic on the marker; nothing is committed, the input waits.
  await touched.sendUserText('after rollback');
  const failure = await eventually(
    async () =>
      (await historiesOf(temporal, touched.threadId))[0]!.events.find((e) => e.workflowTaskFailedEventAttributes)
        ?.workflowTaskFailedEventAttributes,
    30_000,
    'build A to fail the marked run',
  );
  expect(failure.cause).toBe(
    proto.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
  );
  expect(failure.failure?.message).toContain(`Non-deprecated patch marker encountered for change ${V03}`);
  expect(failure.identity).toBe('build-A');
  // What an operator sees: the client reports the thread failed, with Temporal's reason.
  const stuck = await eventually(
    async () => {
      const s = await touched.status();
      return s.status === 'failed' ? s : undefined;
    },
    30_000,
    'the thread to show failed',
  );
  expect(stuck.lastError).toContain(V03);
  expect(render(await touched.history())).toEqual(touchedLines);

  // ---- Forward again: a build with the patch serves it, and the waiting input is answered.
  await a.stop();
  b = await startBuild('B', inject('workflowBundlePath'));
  await touched.waitForIdle({ settled: true, timeoutMs: 60_000 });
  expect(render(await touched.history())).toEqual([
    ...touchedLines,
    'user: after rollback',
    'assistant: ok: after rollback',
  ]);
  // Its only failures are A's, on the marker; B completed the task after them.
  const touchedFailures = taskFailures(await historiesOf(temporal, touched.threadId));
  expect(touchedFailures.length).toBeGreaterThan(0);
  expect(touchedFailures.every((f) => f.includes(`Non-deprecated patch marker encountered for change ${V03}`))).toBe(
    true,
  );
  expect((await touched.status()).status).toBe('idle');
  await viaCan.sendUserText('forward again');
  await viaCan.waitForIdle({ settled: true });
  expect(render(await viaCan.history())).toEqual([...canLines, 'user: forward again', 'assistant: ok: forward again']);
  expect(taskFailures(await historiesOf(temporal, viaCan.threadId))).toEqual([]);
  await b.stop();
}, 240_000);
