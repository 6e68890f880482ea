/**
 * Upgrades under parked threads, for every release of the supported window and one older (issue 39, decision 85).
 * Threads park on a release's frozen workflow code in five waits — a tool result pending, a timer, a child waiting on
 * its own tool, over budget with an input queued, rewound with a new call pending — then:
 *
 * - **window releases** (0.11, 0.12): the fleet rolls forward — this checkout's workers join the old ones on the task
 *   queue, the old ones stop — and the results arrive while a client queries every thread's status and waits on it
 *   (`waitForIdle`, an update) without pause, so queries and updates land during slices;
 * - **an older release** (0.10): the bridge release (0.12's frozen code) serves the task queue and `migrate` moves every
 *   thread onto a run it started, then this checkout takes over; the same inputs follow.
 *
 * Every thread answers what comes next with its history exactly the parked one plus the new turns, no workflow task
 * of any run fails, and every run of every thread replays against this checkout's code or the release that ran it.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../src/model/scripted';
import { toolResult } from '../../src/tools/messages';
import { treeScript, treeTools } from '../fixtures/tree-script';
import { bundlePath, bundleWorker, workerProcess } from '../bundle-workers';
import { eventually, render, startTestSystem, type TestSystem, uid } from '../helpers';

/** Long enough that no sleeper wakes before the upgrade, short enough to fire after it. */
const SLEEP_SECONDS = 25;

let sys: TestSystem;
const model = new ScriptedModel(treeScript);

beforeAll(async () => {
  sys = await startTestSystem({ model, tools: treeTools(), noWorker: true });
});
afterAll(() => sys?.shutdown());

/** A worker of the suite's task queue on `release`'s frozen workflow code (undefined: this checkout's). */
const worker = (release?: string) => bundleWorker(sys, model, treeTools(), release);

/**
 * A worker of `release`'s frozen workflow code in a process of its own, as the old half of a rolling deploy: the SDK
 * lets one process run one worker per task queue.
 */
const processWorker = (release: string) =>
  workerProcess({ taskQueue: sys.taskQueue, storePath: sys.storePath, bundle: bundlePath(release), build: release });

const history = async (id: string) => render(await sys.client.thread(id).history());
const status = (id: string) => sys.client.thread(id).status();

interface Parked {
  tool: string;
  sleeper: string;
  parent: string;
  child: string;
  budget: string;
  rewound: string;
  /** Each thread's rendered history when parked. */
  before: Map<string, string[]>;
}

/** Parks one thread in each wait on whatever workers serve the task queue now. */
async function park(tag: string): Promise<Parked> {
  const p = {
    tool: uid(`${tag}-tool`),
    sleeper: uid(`${tag}-sleep`),
    parent: uid(`${tag}-parent`),
    budget: uid(`${tag}-budget`),
    rewound: uid(`${tag}-rewound`),
  };
  await sys.client.sendUserText(p.tool, 'call wait_for_ci {}');
  await sys.client.sendUserText(p.sleeper, `call sleep {"seconds":${SLEEP_SECONDS}}`);
  await sys.client.sendUserText(p.parent, 'spawn wait:child task');
  await sys.client.startThread({ threadId: p.budget, budget: { totalTokens: 40 } });
  for (const t of ['one', 'two']) {
    await sys.client.sendUserText(p.budget, t);
    await sys.client.thread(p.budget).waitForIdle();
  }
  await sys.client.sendUserText(p.budget, 'three');
  expect((await sys.client.thread(p.budget).waitForIdle()).status).toBe('over_budget');
  await sys.client.sendUserText(p.budget, 'four');
  await sys.client.sendUserText(p.rewound, 'call wait_for_ci {"try":1}');
  await sys.client.thread(p.rewound).waitForIdle();
  await sys.client.rewindThread(p.rewound, { to: 1 });
  await sys.client.sendUserText(p.rewound, 'call wait_for_ci {"try":2}');
  for (const id of [p.tool, p.parent, p.rewound]) await sys.client.thread(id).waitForIdle();
  await sys.client.thread(p.sleeper).waitForIdle({ settled: true });
  const child = await eventually(async () => (await status(p.parent)).children[0], 20_000, 'child');
  await eventually(async () => (await status(child)).pendingCall?.name === 'child_wait' || undefined, 20_000, 'child');
  await eventually(async () => (await status(p.budget)).queued === 1 || undefined, 10_000, 'queued while over budget');
  const all = { ...p, child };
  const before = new Map<string, string[]>();
  for (const id of Object.values(all)) before.set(id, await history(id));
  return { ...all, before };
}

/** Queries and waits on every thread without pause until stopped: queries and updates land during slices. */
function pester(ids: string[]): { stop(): Promise<number> } {
  let stopped = false;
  let calls = 0;
  const loop = async () => {
    while (!stopped) {
      for (const id of ids) {
        if (stopped) break;
        await Promise.all([
          status(id).catch(() => undefined),
          sys.client
            .thread(id)
            .waitForIdle({ timeoutMs: 2_000 })
            .catch(() => undefined),
        ]);
        calls += 2;
      }
    }
  };
  const done = Promise.all([loop(), loop()]);
  return {
    async stop() {
      stopped = true;
      await done;
      return calls;
    },
  };
}

/** Sends what each parked thread waits for and checks its history grows by exactly the expected turns. */
async function finish(p: Parked): Promise<void> {
  const tool = await status(p.tool);
  await sys.client.deliver(toolResult({ threadId: p.tool, toolCallId: tool.pendingCall!.id }, 'Build 1: green'));
  const childCall = (await status(p.child)).pendingCall!;
  await sys.client.deliver(toolResult({ threadId: p.child, toolCallId: childCall.id }, 'child done'));
  const rewound = await status(p.rewound);
  await sys.client.deliver(toolResult({ threadId: p.rewound, toolCallId: rewound.pendingCall!.id }, 'Build 2: red'));
  await sys.client.setBudget({ thread: p.budget }, { totalTokens: 10_000 });

  const grows = async (id: string, added: (lines: string[]) => boolean, what: string) =>
    eventually(
      async () => {
        const lines = await history(id);
        const before = p.before.get(id)!;
        return lines.length > before.length && added(lines.slice(before.length)) ? lines : undefined;
      },
      60_000,
      what,
    );
  const tail = (expected: string[]) => (added: string[]) => JSON.stringify(added) === JSON.stringify(expected);
  await grows(p.tool, tail(['result #1: Build 1: green', 'assistant: ok: Build 1: green']), 'tool');
  // Call ids are numbered by their order in the rendered history, where the archived call is not.
  await grows(p.rewound, tail(['result #1: Build 2: red', 'assistant: ok: Build 2: red']), 'rewound');
  await grows(
    p.budget,
    tail(['user: three', 'assistant: ok: three', 'user: four', 'assistant: ok: four']),
    'budget raised',
  );
  await grows(p.sleeper, (added) => added.length === 2 && added[0]!.startsWith('result #1: Slept'), 'wake-up');
  await grows(p.parent, (added) => added.some((l) => l.startsWith('noted:') || l.includes('noted:')), 'report');
  for (const id of [p.tool, p.rewound, p.budget, p.sleeper, p.parent, p.child])
    expect((await status(id)).dropped, `${id} dropped nothing`).toEqual({});
}

/** Every run of `id`: none failed a workflow task, and each replays on this checkout or on `ranOn`'s code. */
async function runsReplay(id: string, ranOn: string[]): Promise<void> {
  const runs: string[] = [];
  for await (const wf of sys.temporal.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push(wf.runId);
  expect(runs.length).toBeGreaterThan(0);
  for (const runId of runs) {
    const h = await sys.temporal.workflow.getHandle(id, runId).fetchHistory();
    expect(
      (h.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes),
      `${id} run ${runId}: no failed workflow task`,
    ).toEqual([]);
    const errors: string[] = [];
    let replayed = false;
    for (const release of [undefined, ...ranOn]) {
      try {
        await Worker.runReplayHistory({ workflowBundle: { codePath: bundlePath(release) } }, h, id);
        replayed = true;
        break;
      } catch (e) {
        errors.push(`${release ?? 'this checkout'}: ${String(e).slice(0, 300)}`);
      }
    }
    expect(replayed, `${id} run ${runId} replays\n${errors.join('\n')}`).toBe(true);
  }
}

const ids = (p: Parked) => [p.tool, p.sleeper, p.parent, p.child, p.budget, p.rewound];

describe.each(['v0.11', 'v0.12'])('threads parked on %s, the fleet rolled forward', (release) => {
  it('every thread goes on after the roll with its history exact, queried and waited on during its slices', async () => {
    const old = await processWorker(release);
    let current: { stop(): Promise<void> } | undefined;
    try {
      const p = await park(release);
      // A rolling deploy: this checkout's worker joins, then the old one goes.
      current = await worker();
      await old.stop();
      const pestering = pester(ids(p));
      await finish(p);
      expect(await pestering.stop()).toBeGreaterThan(0);
      for (const id of ids(p)) await runsReplay(id, [release]);
    } finally {
      await old.stop().catch(() => undefined);
      await current?.stop();
    }
  });
});

describe('threads parked on v0.10, older than the next window, moved by the bridge release', () => {
  it('0.12 migrates every thread; this checkout finishes them with their history exact', async () => {
    const old = await worker('v0.10');
    let p: Parked;
    try {
      p = await park('v0.10');
    } finally {
      await old.stop();
    }
    const bridge = await worker('v0.12');
    try {
      const before = new Date();
      const report = await eventually(
        async () => {
          const r = await sys.client.migrateThreads({ before, threadIds: ids(p) });
          return r.found === ids(p).length ? r : undefined;
        },
        30_000,
        'every thread listed',
      );
      expect(report.threads.map((t) => t.outcome)).toEqual(ids(p).map(() => 'moved'));
    } finally {
      await bridge.stop();
    }
    const current = await worker();
    try {
      const pestering = pester(ids(p));
      await finish(p);
      await pestering.stop();
      for (const id of ids(p)) await runsReplay(id, ['v0.10', 'v0.12']);
    } finally {
      await current.stop();
    }
  });
});
