/**
 * `ThreadOptions.baseRelease: '0.5'` (decision 66). Since release 0.13 every rule of 0.2 to 0.10 holds without asking
 * (decision 85), and the option only leaves out 0.11's question: a thread started with it records no patch marker on
 * its common path, children and continue-as-new runs inherit it, and threads without it record `infinity-v0.11` once
 * per run, before the first slice (decision 79).
 *
 * Threads started with it under 0.11 or 0.12 asked 0.6 to 0.10 live on their paths, so their runs hold those markers
 * where this release no longer asks the patches live: it asks them only while replaying (`impliedPatch`), and the SDK
 * must match them there. Such threads, run by the frozen 0.11 and 0.12 bundles through each of those paths, answer it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { ThreadHandle } from '../src/client/thread-handle';
import type { ThreadStatus } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import type { ThreadOptions } from '../src/workflows/contract';
import { workflowIdOfHistory } from '../src/cli/replay-history';
import { treeScript, treeTools } from './fixtures/tree-script';
import { userText } from '../src/tools/messages';
import { createAgentWorker } from '../src/worker/create-worker';
import { V011 } from '../src/workflows/patches';
import {
  checkReplay,
  eventually,
  FAST_POLICY,
  releaseBundle,
  render,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

const HISTORIES = join(__dirname, 'fixtures', 'histories');
const WITH_OPTION: ThreadOptions = { baseRelease: '0.5' };

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: unknown;
}
interface JsonEvent {
  eventType?: string;
  workflowExecutionStartedEventAttributes?: { input?: { payloads?: JsonPayload[] } };
  markerRecordedEventAttributes?: {
    markerName?: string;
    details?: Record<string, { payloads?: { data?: unknown }[] } | undefined>;
  };
  upsertWorkflowSearchAttributesEventAttributes?: { searchAttributes?: { indexedFields?: Record<string, unknown> } };
  workflowTaskFailedEventAttributes?: unknown;
}
interface JsonHistory {
  events: JsonEvent[];
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** The history with `options` merged into its start input's options, as if the client had started it so. */
function withStartOptions(history: JsonHistory, options: ThreadOptions): JsonHistory {
  const copy = structuredClone(history);
  const started = copy.events[0]!.workflowExecutionStartedEventAttributes!;
  const payloads = (started.input ??= {}).payloads ?? [];
  const first = payloads[0];
  const given = first?.data ? (JSON.parse(text(first.data)) as Record<string, unknown> | null) : null;
  const args = { ...given, options: { ...(given?.options as object | undefined), ...options } };
  const payload = { metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(args)) };
  started.input.payloads = [payload, ...payloads.slice(1)];
  return copy;
}

/** A payload's JSON text: base64 in recorded files, bytes in the SDK's events. */
const text = (data: unknown) =>
  typeof data === 'string' ? unb64(data) : data instanceof Uint8Array ? Buffer.from(data).toString('utf8') : '';

/**
 * Patch markers and the `TemporalChangeVersion` upserts that name a patch, in recorded (JSON) or SDK events: what a
 * run records for the patches it asked.
 */
function patchEvents(events: readonly JsonEvent[]): number {
  return events.filter((e) => {
    if (e.markerRecordedEventAttributes?.markerName === 'core_patch') return true;
    const version = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields
      ?.TemporalChangeVersion as JsonPayload | undefined;
    return version !== undefined && text(version.data).includes('infinity-v');
  }).length;
}

/** The ids of the patch markers in `events`, in order. */
const patchIds = (events: readonly JsonEvent[]) =>
  events
    .map((e) => e.markerRecordedEventAttributes)
    .filter((m) => m?.markerName === 'core_patch')
    .map((m) => (JSON.parse(text(m!.details?.['patch-data']?.payloads?.[0]?.data)) as { id: string }).id);

/** Replays `history` on this release's workflow code (under the workflow id its start event names, if not given). */
const replay = (name: string, history: JsonHistory, workflowId?: string) =>
  Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: name },
    history,
    workflowId ?? workflowIdOfHistory(history),
  );

/** Every run of a workflow, newest first, following `continuedExecutionRunId` back to the first. */
async function runs(temporal: Client, workflowId: string) {
  const out: { runId?: string; events: JsonEvent[]; history: JsonHistory; args: { options?: ThreadOptions } }[] = [];
  let runId: string | undefined;
  for (;;) {
    const history = await temporal.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = (history.events ?? []) as unknown as JsonEvent[];
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const data = started?.input?.payloads?.[0]?.data;
    const args = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { options?: ThreadOptions }) : {};
    out.push({ runId, events, history: history as unknown as JsonHistory, args });
    runId = started?.continuedExecutionRunId ?? undefined;
    if (!runId) return out;
  }
}

describe.each(['v0.11', 'v0.12'])(
  'threads on the option that release %s ran through the paths of 0.6 to 0.10',
  (release) => {
    let old: TestSystem;
    const model = new ScriptedModel(treeScript);
    beforeAll(async () => {
      old = await startTestSystem({
        model,
        tools: treeTools(),
        workflowBundlePath: releaseBundle(release),
        threadOptions: WITH_OPTION,
      });
    });
    afterAll(() => old?.shutdown());

    it('hold the markers of 0.6, 0.7, 0.8 and 0.10, replay on this release, and go on on it', async () => {
      const { client, temporal } = old;
      // 0.6: a slice refused for budget.
      const overBudget = uid('base-budget');
      await client.startThread({ threadId: overBudget, budget: { totalTokens: 40 } });
      for (const t of ['one', 'two', 'three']) {
        await client.sendUserText(overBudget, t);
        await client.thread(overBudget).waitForIdle();
      }
      expect((await client.thread(overBudget).status()).status).toBe('over_budget');
      // 0.7: acknowledged deliveries handed to the next run (a low run bound, so the run continues within a few).
      const acked = uid('base-acks');
      const ackClient = new AgentClient({
        client: temporal,
        taskQueue: old.taskQueue,
        store: old.store,
        threadOptions: { ...WITH_OPTION, maxRunEvents: 30 },
      });
      await ackClient.startThread({ threadId: acked });
      for (let i = 0; (await ackClient.thread(acked).status()).runs < 2; i++) {
        expect(i).toBeLessThan(20);
        expect(await ackClient.deliver(userText(acked, `acked ${i}`), { acknowledge: true })).toMatchObject({
          delivered: true,
        });
        await ackClient.thread(acked).waitForIdle();
      }
      // 0.8: a rewind.
      const rewound = uid('base-rewind');
      for (const t of ['a', 'b']) {
        await client.sendUserText(rewound, t);
        await client.thread(rewound).waitForIdle();
      }
      await client.rewindThread(rewound, { to: 2 });
      // 0.10: a thread cancelled while it has a child.
      const cancelled = uid('base-cancel');
      await client.sendUserText(cancelled, 'spawn wait:child task');
      const child = await eventually(
        async () => (await client.thread(cancelled).status()).children[0],
        20_000,
        'child',
      );
      await temporal.workflow.getHandle(cancelled).cancel();
      await eventually(
        async () => (await temporal.workflow.getHandle(child).describe()).status.name === 'CANCELLED' || undefined,
        30_000,
        'the child cancelled with its parent',
      );

      const all = (
        await Promise.all(
          [overBudget, acked, rewound, cancelled, child].map(async (id) =>
            (await runs(temporal, id)).map((r) => ({ id, ...r })),
          ),
        )
      ).flat();
      // 0.11's rules were never asked (the option), and each path asked its release's patch live.
      const ids = new Set(all.flatMap((r) => patchIds(r.events)));
      expect(ids.has(V011)).toBe(false);
      for (const id of ['infinity-v0.6', 'infinity-v0.7', 'infinity-v0.8', 'infinity-v0.10']) expect(ids).toContain(id);
      // This release replays every run: each marker is matched where it asks the patch while replaying.
      for (const r of all) await replay(`${release} ${r.id} ${r.runId ?? 'latest'}`, r.history, r.id);

      // And goes on with them: this release's worker takes the task queue.
      // The run each goes on in, and its markers, before this release takes over.
      const before = new Map(
        await Promise.all(
          [overBudget, acked, rewound].map(async (id) => {
            const { runId } = await temporal.workflow.getHandle(id).describe();
            return [id, { runId, markers: patchIds((await runs(temporal, id))[0]!.events) }] as const;
          }),
        ),
      );
      await old.worker!.shutdown();
      const current = await createAgentWorker({
        connection: old.connection,
        taskQueue: old.taskQueue,
        store: old.store,
        model,
        tools: treeTools(),
        completionPolicy: FAST_POLICY,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      const running = current.run();
      try {
        await client.setBudget({ thread: overBudget }, { totalTokens: 10_000 });
        await client.sendUserText(rewound, 'c');
        await ackClient.deliver(userText(acked, 'after'), { acknowledge: true });
        for (const [id, line] of [
          [overBudget, 'assistant: ok: three'],
          [rewound, 'assistant: ok: c'],
          [acked, 'assistant: ok: after'],
        ] as const)
          await eventually(
            async () => render(await client.thread(id).history()).at(-1) === line || undefined,
            30_000,
            `${id}: ${line}`,
          );
        for (const id of [overBudget, acked, rewound]) {
          const { runId, markers } = before.get(id)!;
          const went = await temporal.workflow.getHandle(id, runId).fetchHistory();
          const events = (went.events ?? []) as unknown as JsonEvent[];
          expect(events.filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
          // Nothing asked live on this release: the run holds the markers it held, and a run this release started
          // from it (a continue-as-new) holds none.
          expect(patchIds(events)).toEqual(markers);
          await replay(`${release} ${id} on this release`, went as unknown as JsonHistory, id);
          const [latest] = await runs(temporal, id);
          if ((await temporal.workflow.getHandle(id).describe()).runId !== runId) {
            expect(patchIds(latest!.events)).toEqual([]);
            await replay(`${release} ${id}, its next run`, latest!.history, id);
          }
        }
      } finally {
        current.shutdown();
        await running;
      }
    }, 180_000);
  },
);

describe('the option read from the start input on replay', () => {
  it("a window history rewritten to carry it meets 0.11's marker, which nothing then asks for", async () => {
    const name = 'v0.12/sync-tool.json';
    const history = JSON.parse(readFileSync(join(HISTORIES, name), 'utf8')) as JsonHistory;
    expect(patchIds(history.events)).toEqual([V011]);
    await replay(name, history);
    await expect(replay(name, withStartOptions(history, WITH_OPTION))).rejects.toMatchObject({
      name: 'DeterminismViolationError',
      message: expect.stringContaining(V011),
    });
  }, 60_000);
});

describe('a thread started with the option', () => {
  let sys: TestSystem;
  let plain: TestSystem;
  beforeAll(async () => {
    // A low run bound, so the root continues-as-new within a few messages.
    [sys, plain] = await Promise.all([
      startTestSystem({
        model: new ScriptedModel(treeScript),
        tools: treeTools(),
        threadOptions: { ...WITH_OPTION, maxRunEvents: 30 },
      }),
      startTestSystem({
        model: new ScriptedModel(treeScript),
        tools: treeTools(),
        threadOptions: { maxRunEvents: 30 },
      }),
    ]);
  });
  afterAll(async () => {
    await sys?.shutdown();
    await plain?.shutdown();
  });

  /**
   * `waitForIdle`, again if the update failed with its workflow task: with a run bound this low, a task that
   * continues-as-new while a signal arrives is refused (UnhandledCommand) and takes the update with it, with or without
   * the option (the task is retried and the thread goes on).
   */
  async function settled(thread: ThreadHandle): Promise<ThreadStatus> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await thread.waitForIdle({ settled: true });
      } catch (e) {
        if (attempt >= 5 || !String(e).includes('Workflow Update failed')) throw e;
      }
    }
  }

  /** A thread that spawned a child, which reported and closed, then took messages until it had `runs` runs. */
  async function spawnedAndContinued(system: TestSystem, prefix: string, runs: number) {
    const thread = await system.client.startThread({ threadId: uid(prefix) });
    await thread.sendUserText('spawn report:child done');
    const { children } = await settled(thread);
    expect(children).toHaveLength(1);
    let messages = 0;
    while ((await thread.status()).runs < runs && messages < 30) {
      await thread.sendUserText(`message ${messages++}`);
      await settled(thread);
    }
    // The child reports and closes: all its events are in.
    await eventually(
      async () => (await system.temporal.workflow.getHandle(children[0]!).describe()).status.name === 'COMPLETED',
      30_000,
      'the child to close',
    );
    return { thread, children };
  }

  it('records no patch marker in any run of the root or its child, and both keep the option', async () => {
    const { thread, children } = await spawnedAndContinued(sys, 'base', 3);
    expect((await thread.status()).runs).toBeGreaterThanOrEqual(3);

    const rootRuns = await runs(sys.temporal, thread.threadId);
    expect(rootRuns.length).toBeGreaterThanOrEqual(3);
    const child = await runs(sys.temporal, children[0]!);
    for (const run of [...rootRuns, ...child]) {
      expect(run.args.options?.baseRelease).toBe('0.5');
      expect(patchEvents(run.events)).toBe(0);
    }
    // And they replay under this code (the option is in each run's start input). The latest run and the child are
    // recorded into the release being prepared (RECORD_HISTORIES), so later releases replay threads started with it.
    const first = rootRuns[rootRuns.length - 1]!.runId!;
    // Replayed, not recorded: a release's set holds one history per workflow id (the continued run below is this one's).
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'base-release-first-run' },
      await sys.temporal.workflow.getHandle(thread.threadId, first).fetchHistory(),
      thread.threadId,
    );
    await checkReplay(thread, 'base-release-continued');
    const childHandle = { threadId: children[0]!, workflow: sys.temporal.workflow.getHandle(children[0]!) };
    await checkReplay(childHandle, 'base-release-child');
  }, 120_000);

  it("a rollback within the window: 0.11's and 0.12's code replay this release's runs, but not one on the option that took a path of 0.6 to 0.10", async () => {
    // A path of 0.10: a thread cancelled while it has a child.
    const cancelledWithChild = async (system: TestSystem, prefix: string) => {
      const id = uid(prefix);
      await system.client.sendUserText(id, 'spawn wait:child task');
      const child = await eventually(
        async () => (await system.client.thread(id).status()).children[0],
        20_000,
        'child',
      );
      await system.temporal.workflow.getHandle(id).cancel();
      await eventually(
        async () =>
          (await system.temporal.workflow.getHandle(child).describe()).status.name === 'CANCELLED' || undefined,
        30_000,
        'the child cancelled with its parent',
      );
      return { id, history: await system.temporal.workflow.getHandle(id).fetchHistory() };
    };
    const withOption = await cancelledWithChild(sys, 'rollback-base');
    const without = await cancelledWithChild(plain, 'rollback-plain');
    expect(patchIds(withOption.history.events as unknown as JsonEvent[])).toEqual([]);
    expect(patchIds(without.history.events as unknown as JsonEvent[])).toEqual([V011]);
    for (const release of ['v0.11', 'v0.12']) {
      const options = { workflowBundle: { codePath: releaseBundle(release) }, replayName: `rollback to ${release}` };
      await Worker.runReplayHistory(options, without.history, without.id);
      // Those releases ask 0.10's patch for a thread on the option, find no marker, and do not cancel the child.
      await expect(Worker.runReplayHistory(options, withOption.history, withOption.id)).rejects.toMatchObject({
        name: 'DeterminismViolationError',
      });
    }
  }, 90_000);

  /** Whether the first patch marker comes before the first local slice's marker (in the first task, that is). */
  const markerBeforeFirstSlice = (events: readonly JsonEvent[]) => {
    const marker = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    const slice = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    return marker !== -1 && (slice === -1 || marker < slice);
  };

  const hasSlice = (events: readonly JsonEvent[]) =>
    events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');

  it("without it, every run of a thread, its child's and its next runs', records 0.11's marker once, before its first slice", async () => {
    const { thread, children } = await spawnedAndContinued(plain, 'plain', 2);
    const rootRuns = await runs(plain.temporal, thread.threadId);
    expect(rootRuns.length).toBeGreaterThanOrEqual(2);
    const all = [...rootRuns, ...(await runs(plain.temporal, children[0]!))];
    for (const run of all) {
      // A run that neither ran a slice nor asked a patch (one continued while idle) records nothing.
      expect(['', 'infinity-v0.11']).toContain(patchIds(run.events).join(','));
      if (hasSlice(run.events)) expect(markerBeforeFirstSlice(run.events)).toBe(true);
    }
    expect(all.filter((run) => hasSlice(run.events)).length).toBeGreaterThanOrEqual(2);
    await checkReplay(thread, 'rules-0.11-continued');
  }, 120_000);

  it('a thread started by hand does the same', async () => {
    const threadId = uid('by-hand');
    await plain.temporal.workflow.start('agentThread', {
      taskQueue: plain.taskQueue,
      workflowId: threadId,
      args: [{ threadId, kind: 'root' }],
    });
    const thread = plain.client.thread(threadId);
    await thread.sendUserText('hello');
    await settled(thread);
    const [run] = await runs(plain.temporal, threadId);
    expect(patchIds(run!.events)).toEqual(['infinity-v0.11']);
    expect(markerBeforeFirstSlice(run!.events)).toBe(true);
    await checkReplay(thread, 'rules-0.11-by-hand');
  }, 60_000);
});
