/**
 * Moving parked threads onto the release the workers run (issue 39, decision 84): `migrateThreads` and `infinity-
 * temporal migrate` ask each running thread whose run started before a cutoff to continue as new; the thread does so
 * at its next pause between slices, with all its state, whatever it waits for (a tool, a timer, a child, a budget).
 * Threads parked on a release before the window (0.1, 0.5, 0.10: frozen bundles) reach this release through the
 * bridge (0.12's frozen code moves them, decision 85); one that meets this release first fails its workflow task,
 * is reported with why and loses nothing; a sweep is bounded and resumes with the same cutoff.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrateInput } from '../src/core/inputs';
import { ScriptedModel } from '../src/model/scripted';
import { toolResult } from '../src/tools/messages';
import { startLocalSystem } from '../src/local-system';
import { V011, V012 } from '../src/workflows/patches';
import { bundleWorker } from './bundle-workers';
import { cliRunner } from './cli-process';
import { treeScript, treeTools } from './fixtures/tree-script';
import * as Threads from '../src/core/builtins/threads';
import {
  checkReplay,
  eventually,
  moveThroughBridge,
  releaseBundle,
  render,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

const FAST = { unexpectedEndWaitMs: 50, transientWaitMs: 50, rateLimitWaitMs: 50 };

let sys: TestSystem;
const model = new ScriptedModel(treeScript);

/** A worker of this system's task queue running `release`'s frozen code (default: this checkout's workflow code). */
const worker = (release?: string) => bundleWorker(sys, model, treeTools(), release);

beforeAll(async () => {
  sys = await startTestSystem({ model, tools: treeTools(), noWorker: true });
});
afterAll(() => sys?.shutdown());

const status = (id: string) => sys.client.thread(id).status();
const runIdOf = async (id: string) => (await sys.temporal.workflow.getHandle(id).describe()).runId;

/** Waits until visibility lists `ids` as running threads whose run started before `before`. */
async function listed(ids: string[], before: Date): Promise<void> {
  await eventually(
    async () => {
      const r = await sys.client.migrateThreads({ before, dryRun: true });
      const found = new Set(r.threads.map((t) => t.threadId));
      return ids.every((id) => found.has(id)) || undefined;
    },
    20_000,
    'threads listed by visibility',
  );
}

async function failedTasks(id: string, runId?: string): Promise<number> {
  const { events } = await sys.temporal.workflow.getHandle(id, runId).fetchHistory();
  return (events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
}

/** The patch ids of a run's markers (their details are payloads). */
async function patchMarkers(id: string, runId?: string): Promise<string[]> {
  const { events } = await sys.temporal.workflow.getHandle(id, runId).fetchHistory();
  return (events ?? []).flatMap((e) => {
    const data = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { id: string }).id] : [];
  });
}

describe('on this release', () => {
  let current: { stop(): Promise<void> };
  beforeAll(async () => {
    current = await worker();
  });
  afterAll(() => current?.stop());

  it('threads parked on a tool, a timer, a child and idle move onto new runs and go on with their history exact', async () => {
    const onTool = uid('mig-tool');
    const sleeping = uid('mig-sleep');
    const parent = uid('mig-parent');
    const idle = uid('mig-idle');
    await sys.client.sendUserText(onTool, 'call wait_for_ci {}');
    await sys.client.sendUserText(sleeping, 'call sleep {"seconds":8}');
    await sys.client.sendUserText(parent, 'spawn wait:child task');
    await sys.client.sendUserText(idle, 'hello');
    await sys.client.thread(sleeping).waitForIdle({ settled: true });
    for (const id of [onTool, parent, idle]) await sys.client.thread(id).waitForIdle();
    const child = await eventually(async () => (await status(parent)).children[0], 20_000, 'child');
    await eventually(
      async () => (await status(child)).pendingCall?.name === 'child_wait' || undefined,
      20_000,
      'child waits',
    );
    const ids = [onTool, sleeping, parent, idle, child];
    const runsBefore = new Map(await Promise.all(ids.map(async (id) => [id, await runIdOf(id)] as const)));
    const historyBefore = new Map(
      await Promise.all(ids.map(async (id) => [id, render(await sys.client.thread(id).history())] as const)),
    );
    const before = new Date();
    await listed(ids, before);

    const report = await sys.client.migrateThreads({ before, concurrency: 4 });
    const mine = report.threads.filter((t) => ids.includes(t.threadId));
    expect(mine.map((t) => [t.threadId, t.outcome]).sort()).toEqual(ids.map((id) => [id, 'moved']).sort());
    for (const t of mine) {
      expect(t.runId).toBe(runsBefore.get(t.threadId));
      expect(t.newRunId).toBe(await runIdOf(t.threadId));
      // Nothing was added to or lost from any conversation by the move.
      expect(render(await sys.client.thread(t.threadId).history())).toEqual(historyBefore.get(t.threadId));
      const st = await status(t.threadId);
      expect(st.dropped).toEqual({});
      expect(await failedTasks(t.threadId, t.runId)).toBe(0);
    }
    // Each waits for what it waited for before, in its new run.
    expect((await status(onTool)).pendingCall?.name).toBe('wait_for_ci');
    expect((await status(child)).pendingCall?.name).toBe('child_wait');

    // And goes on: the tool's result, the timer, the child's report and a user text land in the new runs.
    const ci = {
      threadId: onTool,
      toolCallId: (await status(onTool)).pendingCall!.id,
    };
    await sys.client.deliver(toolResult(ci, 'Build 7: green'));
    await sys.client.sendUserText(idle, 'still there?');
    const childCall = (await status(child)).pendingCall!;
    await sys.client.deliver(toolResult({ threadId: child, toolCallId: childCall.id }, 'done'));
    await eventually(
      async () =>
        render(await sys.client.thread(onTool).history()).at(-1) === 'assistant: ok: Build 7: green' || undefined,
      30_000,
      'tool result',
    );
    await eventually(
      async () => render(await sys.client.thread(idle).history()).at(-1) === 'assistant: ok: still there?' || undefined,
      30_000,
      'user text',
    );
    await eventually(
      async () =>
        render(await sys.client.thread(sleeping).history()).some((l) => l.startsWith('result #1: Slept')) || undefined,
      30_000,
      'wake-up',
    );
    await eventually(
      async () => render(await sys.client.thread(parent).history()).some((l) => l.includes('noted:')) || undefined,
      30_000,
      'report',
    );
    expect(render(await sys.client.thread(idle).history())).toEqual([
      ...historyBefore.get(idle)!,
      'user: still there?',
      'assistant: ok: still there?',
    ]);
    // The run that moved replays, with its migrate signal and the 0.12 marker (recorded for later releases' gate).
    const handle = sys.temporal.workflow.getHandle(idle, runsBefore.get(idle));
    expect(await patchMarkers(idle, runsBefore.get(idle))).toContain(V012);
    await checkReplay({ threadId: idle, workflow: handle }, 'migrate-idle-moved', undefined, runsBefore.get(idle));
  });

  it('a sweep is bounded by --limit and resumes with the same cutoff; a dry run moves nothing', async () => {
    const ids = Array.from({ length: 5 }, (_, i) => uid(`mig-batch${i}`));
    for (const id of ids) await sys.client.sendUserText(id, 'hello');
    for (const id of ids) await sys.client.thread(id).waitForIdle();
    const before = new Date();
    await listed(ids, before);
    const runs = await Promise.all(ids.map(runIdOf));

    const dry = await sys.client.migrateThreads({ before, dryRun: true });
    expect(dry.threads.filter((t) => ids.includes(t.threadId)).every((t) => t.outcome === 'listed')).toBe(true);
    expect(await Promise.all(ids.map(runIdOf))).toEqual(runs);

    // Other tests' threads share the task queue: count only this test's.
    const moved = new Set<string>();
    let sweeps = 0;
    for (;;) {
      const r = await sys.client.migrateThreads({ before, limit: 2 });
      sweeps += 1;
      expect(r.found).toBeLessThanOrEqual(2);
      expect(r.notMoved).toBe(0);
      for (const t of r.threads) if (t.outcome === 'moved' && ids.includes(t.threadId)) moved.add(t.threadId);
      if (r.found === 0) break;
      expect(sweeps).toBeLessThan(20);
    }
    expect([...moved].sort()).toEqual([...ids].sort());
    const after = await Promise.all(ids.map(runIdOf));
    after.forEach((r, i) => expect(r).not.toBe(runs[i]));
    // Moved once: a second complete sweep with the same cutoff finds none of them.
    const again = await sys.client.migrateThreads({ before });
    expect(again.threads.filter((t) => ids.includes(t.threadId))).toEqual([]);
    expect(again.complete).toBe(true);
  });

  it('a migrate that arrives with a user text moves the run once the text is answered', async () => {
    const id = uid('mig-busy');
    await sys.client.sendUserText(id, 'hello');
    await sys.client.thread(id).waitForIdle();
    const runBefore = await runIdOf(id);
    // A migrate and a user text in the same moment: the text is answered, in order, and the run moves after it.
    await sys.temporal.workflow.getHandle(id).signal('input', migrateInput('m-1', id));
    await sys.client.sendUserText(id, 'after the move');
    await eventually(
      async () => render(await sys.client.thread(id).history()).at(-1) === 'assistant: ok: after the move' || undefined,
      30_000,
      'answer',
    );
    await eventually(async () => (await runIdOf(id)) !== runBefore || undefined, 30_000, 'moved');
    expect((await status(id)).dropped).toEqual({});
    expect(render(await sys.client.thread(id).history())).toEqual([
      'user: hello',
      'assistant: ok: hello',
      'user: after the move',
      'assistant: ok: after the move',
    ]);
  });

  it('a thread over its budget moves while it waits, with its queue, and goes on once raised', async () => {
    const id = uid('mig-budget');
    await sys.client.startThread({ threadId: id, budget: { totalTokens: 40 } });
    for (const t of ['one', 'two']) {
      await sys.client.sendUserText(id, t);
      await sys.client.thread(id).waitForIdle();
    }
    await sys.client.sendUserText(id, 'three');
    expect((await sys.client.thread(id).waitForIdle()).status).toBe('over_budget');
    await sys.client.sendUserText(id, 'four');
    // 'three' waits as the stopped slice's batch; 'four' in the queue.
    await eventually(async () => (await status(id)).queued === 1 || undefined, 10_000, 'queued');
    const runBefore = await runIdOf(id);
    const before = new Date();
    await listed([id], before);
    const r = await sys.client.migrateThreads({ before });
    expect(r.threads.find((t) => t.threadId === id)).toMatchObject({ outcome: 'moved', runId: runBefore });
    const moved = await status(id);
    expect(moved).toMatchObject({ status: 'over_budget', queued: 1, dropped: {} });
    await sys.client.setBudget({ thread: id }, { totalTokens: 10_000 });
    await eventually(
      async () => render(await sys.client.thread(id).history()).at(-1) === 'assistant: ok: four' || undefined,
      30_000,
      'drained',
    );
    const lines = render(await sys.client.thread(id).history());
    for (const t of ['one', 'two', 'three', 'four']) expect(lines.filter((l) => l === `user: ${t}`)).toHaveLength(1);
  });

  it('a migrate input delivered as an update is refused, and one for another thread is dropped as malformed', async () => {
    const id = uid('mig-refused');
    await sys.client.sendUserText(id, 'hello');
    await sys.client.thread(id).waitForIdle();
    const runBefore = await runIdOf(id);
    const r = await sys.client.deliver(migrateInput('m-upd', id), { acknowledge: true }).catch((e: Error) => e);
    expect(String(r instanceof Error ? r.message : JSON.stringify(r))).toMatch(/migrate input is sent as a signal/);
    await sys.temporal.workflow.getHandle(id).signal('input', migrateInput('m-other', 'someone-else'));
    await eventually(async () => (await status(id)).dropped.malformed === 1 || undefined, 20_000, 'dropped');
    expect(await runIdOf(id)).toBe(runBefore);
  });
});

/** Every run of a thread, oldest first, by following each start event's `continuedExecutionRunId` back. */
async function runsOf(id: string): Promise<string[]> {
  const runs: string[] = [];
  let runId: string | undefined = await runIdOf(id);
  while (runId) {
    runs.unshift(runId);
    const { events } = await sys.temporal.workflow.getHandle(id, runId).fetchHistory();
    runId = events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return runs;
}

/**
 * Releases before the window (decision 85): this release does not replay their runs, so their threads come through the
 * bridge (0.12's frozen workflow code and `migrate`), as docs/upgrading.md tells a user on such a release to do.
 */
describe('threads of releases before the window', () => {
  it.each(['v0.1', 'v0.5', 'v0.10'])(
    'threads parked on %s move through the bridge (0.12) and go on on this release, their history exact',
    async (release) => {
      const onTool = uid('mig-old-tool');
      const idle = uid('mig-old-idle');
      const parent = uid('mig-old-parent');
      const old = await worker(release);
      let child: string;
      try {
        await sys.client.sendUserText(onTool, 'call wait_for_ci {}');
        await sys.client.sendUserText(idle, 'hello');
        await sys.client.sendUserText(parent, 'spawn wait:child task');
        for (const id of [onTool, idle, parent]) await sys.client.thread(id).waitForIdle();
        child = await eventually(async () => (await status(parent)).children[0], 20_000, 'child');
        await eventually(
          async () => (await status(child)).pendingCall?.name === 'child_wait' || undefined,
          20_000,
          'child waits',
        );
      } finally {
        await old.stop();
      }
      const ids = [onTool, idle, parent, child];
      const historyBefore = new Map(
        await Promise.all(ids.map(async (id) => [id, render(await sys.client.thread(id).history())] as const)),
      );
      const oldRuns = new Map(await Promise.all(ids.map(async (id) => [id, await runIdOf(id)] as const)));

      const moved = await moveThroughBridge(sys, ids, { model, tools: treeTools(), completionPolicy: FAST });
      expect(moved.map((t) => [t.threadId, t.outcome, t.runId]).sort()).toEqual(
        ids.map((id) => [id, 'moved', oldRuns.get(id)]).sort(),
      );

      const current = await worker();
      try {
        // Each waits where it waited, and takes what comes next on this release.
        const call = (await status(onTool)).pendingCall!;
        expect(call.name).toBe('wait_for_ci');
        await sys.client.deliver(toolResult({ threadId: onTool, toolCallId: call.id }, 'Build 9: red'));
        await sys.client.sendUserText(idle, 'still there?');
        const childCall = (await status(child)).pendingCall!;
        expect(childCall.name).toBe('child_wait');
        await sys.client.deliver(toolResult({ threadId: child, toolCallId: childCall.id }, 'done'));
        const last = async (id: string, line: string) =>
          eventually(
            async () => render(await sys.client.thread(id).history()).includes(line) || undefined,
            30_000,
            `${id}: ${line}`,
          );
        await last(onTool, 'assistant: ok: Build 9: red');
        await last(idle, 'assistant: ok: still there?');
        await last(parent, `event #1: ${Threads.reportFromChild('child task')}`);
        for (const id of ids) await sys.client.thread(id).waitForIdle({ settled: true });
        expect(render(await sys.client.thread(onTool).history())).toEqual([
          ...historyBefore.get(onTool)!,
          'result #1: Build 9: red',
          'assistant: ok: Build 9: red',
        ]);
        expect(render(await sys.client.thread(idle).history())).toEqual([
          ...historyBefore.get(idle)!,
          'user: still there?',
          'assistant: ok: still there?',
        ]);
        expect(render(await sys.client.thread(parent).history())).toEqual([
          ...historyBefore.get(parent)!,
          `event #1: ${Threads.reportFromChild('child task')}`,
          `assistant: noted: ${Threads.reportFromChild('child task')}`,
        ]);
        expect(render(await sys.client.thread(child).history()).slice(0, historyBefore.get(child)!.length)).toEqual(
          historyBefore.get(child),
        );
        for (const id of ids) {
          expect((await status(id)).dropped).toEqual({});
          // No workflow task of any run failed: the old release's, the bridge's, this release's.
          const runs = await runsOf(id);
          expect(runs[0]).toBe(oldRuns.get(id));
          for (const run of runs) expect(await failedTasks(id, run)).toBe(0);
          // The run this release goes on with was started by the bridge, and records 0.11's marker at its first turn.
          const newRun = moved.find((t) => t.threadId === id)!.newRunId!;
          expect(runs).toContain(newRun);
          expect(await patchMarkers(id, newRun)).toEqual([V011]);
        }
        // A later worker of this release replays what it went on with (recorded into the set of the release
        // being prepared: runs the bridge started are in the window of 0.13 and 0.14).
        await checkReplay(sys.client.thread(onTool), `bridge-moved-${release}-tool`);
        await checkReplay(sys.client.thread(parent), `bridge-moved-${release}-parent`);
      } finally {
        await current.stop();
      }
    },
  );

  it.each(['v0.1', 'v0.10'])(
    'a thread of %s, too old for this release, fails its workflow task here with why, and the bridge moves it',
    async (release) => {
      const id = uid('mig-too-old');
      const old = await worker(release);
      try {
        await sys.client.sendUserText(id, 'hello');
        await sys.client.thread(id).waitForIdle();
      } finally {
        await old.stop();
      }
      const runBefore = await runIdOf(id);
      // Upgraded straight from 0.1: this release cannot replay the run, its task fails, and the input waits.
      const current = await worker();
      const before = new Date();
      try {
        await sys.client.sendUserText(id, 'while stuck');
        await eventually(async () => (await failedTasks(id)) > 0 || undefined, 20_000, 'a failed task');
        await listed([id], before);
        const r = await sys.client.migrateThreads({ before, threadIds: [id], timeoutMs: 6_000 });
        const t = r.threads.find((x) => x.threadId === id);
        expect(t?.outcome).toBe('not_moved');
        // 0.10's run is refused at its first patch question (most of 0.10's runs would replay on the new rules, by
        // luck); 0.1's asked no patch and fails where its commands differ.
        expect(t?.reason).toMatch(
          release === 'v0.1'
            ? /workflow task keeps failing.*NON_DETERMINISTIC/
            : /workflow task keeps failing.*started by release 0\.10 or older.*release 0\.12/,
        );
        expect(r.complete).toBe(false);
      } finally {
        await current.stop();
      }
      // The repair (docs/upgrading.md): the bridge serves the queue, answers what waited and moves the thread.
      const moved = await moveThroughBridge(sys, [id], { model, tools: treeTools(), completionPolicy: FAST });
      expect(moved).toMatchObject([{ threadId: id, outcome: 'moved', runId: runBefore }]);
      const again = await worker();
      try {
        await sys.client.sendUserText(id, 'on this release');
        await eventually(
          async () =>
            render(await sys.client.thread(id).history()).at(-1) === 'assistant: ok: on this release' || undefined,
          30_000,
          'answer',
        );
        expect(render(await sys.client.thread(id).history())).toEqual([
          'user: hello',
          'assistant: ok: hello',
          'user: while stuck',
          'assistant: ok: while stuck',
          'user: on this release',
          'assistant: ok: on this release',
        ]);
        expect(await failedTasks(id)).toBe(0);
      } finally {
        await again.stop();
      }
    },
  );

  it("release 0.11's workflow code drops a migrate input as malformed, and this release replays that", async () => {
    const id = uid('mig-011');
    const old = await worker('v0.11');
    try {
      await sys.client.sendUserText(id, 'hello');
      await sys.client.thread(id).waitForIdle();
      await sys.temporal.workflow.getHandle(id).signal('input', migrateInput('m-old', id));
      await eventually(async () => (await status(id)).dropped.malformed === 1 || undefined, 20_000, 'dropped');
    } finally {
      await old.stop();
    }
    const runBefore = await runIdOf(id);
    const current = await worker();
    try {
      // Replayed by this release: the old drop stands (no move, no failed task), and the next input is answered.
      await sys.client.sendUserText(id, 'on the new release');
      await eventually(
        async () =>
          render(await sys.client.thread(id).history()).at(-1) === 'assistant: ok: on the new release' || undefined,
        30_000,
        'answer',
      );
      expect(await runIdOf(id)).toBe(runBefore);
      expect(await failedTasks(id)).toBe(0);
    } finally {
      await current.stop();
    }
  });
});

describe('a single process upgraded in place', () => {
  it("startLocalSystem on 0.11's workflow code parks threads; restarted on this release, migrate moves them", async () => {
    const dataDir = join(inject('scratchDir'), uid('mig-local'));
    const taskQueue = uid('mig-local-q');
    const common = { model, tools: treeTools(), dataDir, taskQueue, devServer: { ui: false } };
    const waiting = uid('mig-local-tool');
    const idle = uid('mig-local-idle');
    const old = await startLocalSystem({
      ...common,
      workflowBundle: { codePath: releaseBundle('v0.11') },
    });
    try {
      await old.client.sendUserText(waiting, 'call wait_for_ci {}');
      await old.client.sendUserText(idle, 'hello');
      await old.client.thread(waiting).waitForIdle();
      await old.client.thread(idle).waitForIdle();
    } finally {
      await old.shutdown();
    }
    // The package upgraded in place: the same data directory, this release's workflow code.
    const upgraded = await startLocalSystem({ ...common, workflowBundle: { codePath: inject('workflowBundlePath') } });
    try {
      const { client } = upgraded;
      const report = await eventually(
        async () => {
          const r = await client.migrateThreads();
          return r.moved + r.closed > 0 || r.found > 0 ? r : undefined;
        },
        30_000,
        'a sweep that finds them',
      );
      expect(report.threads.map((t) => [t.threadId, t.outcome]).sort()).toEqual(
        [
          [idle, 'moved'],
          [waiting, 'moved'],
        ].sort(),
      );
      expect(report.complete).toBe(true);
      const st = await client.thread(waiting).status();
      expect(st.pendingCall?.name).toBe('wait_for_ci');
      await client.deliver(toolResult({ threadId: waiting, toolCallId: st.pendingCall!.id }, 'Build 3: green'));
      await client.sendUserText(idle, 'upgraded?');
      await client.thread(waiting).waitForIdle();
      await client.thread(idle).waitForIdle();
      expect(render(await client.thread(waiting).history()).at(-1)).toBe('assistant: ok: Build 3: green');
      expect(render(await client.thread(idle).history())).toEqual([
        'user: hello',
        'assistant: ok: hello',
        'user: upgraded?',
        'assistant: ok: upgraded?',
      ]);
    } finally {
      await upgraded.shutdown();
    }
  });
});

describe('the CLI', () => {
  it('`migrate` lists and moves the threads named (or all) by --before, reports as JSON, and refuses bad flags', async () => {
    const current = await worker();
    try {
      const id = uid('mig-cli');
      await sys.client.sendUserText(id, 'hello');
      await sys.client.thread(id).waitForIdle();
      const before = new Date();
      await listed([id], before);
      const cli = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', sys.taskQueue], {}).run;
      const dry = await cli('migrate', '--before', before.toISOString(), '--dry-run');
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain(id);
      const runBefore = await runIdOf(id);
      const r = await cli('migrate', id, '--before', before.toISOString(), '--json');
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as {
        before: string;
        moved: number;
        complete: boolean;
        threads: { threadId: string; outcome: string }[];
      };
      expect(report.before).toBe(before.toISOString());
      expect(report.threads.map((t) => [t.threadId, t.outcome])).toEqual([[id, 'moved']]);
      expect(await runIdOf(id)).not.toBe(runBefore);
      const bad = await cli('migrate', '--before', 'yesterday-ish');
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--before must be a date/);
      expect((await cli('migrate', '--concurrency', '0')).stderr).toMatch(/--concurrency must be a positive integer/);
    } finally {
      await current.stop();
    }
  });
});
