/**
 * `ThreadOptions.baseRelease: '0.5'` (decision 66): a thread started with it follows releases 0.2–0.5's rules without
 * asking `patched()`, so none of its runs record those patch markers or the `TemporalChangeVersion` upsert; children
 * and continue-as-new runs inherit it; threads without it ask as before (the replay gate, test/replay.test.ts).
 *
 * First, the SDK question the option depends on: does a history that HAS the markers (a thread started with the
 * option whose first task an older worker took, ignoring it) replay under code that no longer asks for them? The
 * recorded 0.5 histories, their start input rewritten to carry the option, answer it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ThreadHandle } from '../src/client/thread-handle';
import type { ThreadStatus } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import type { ThreadOptions } from '../src/workflows/contract';
import { workflowIdOfHistory } from '../src/cli/replay-history';
import { treeScript, treeTools } from './fixtures/tree-script';
import { checkReplay, eventually, startTestSystem, type TestSystem, uid } from './helpers';

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

const OLD_PATCHES = ['infinity-v0.2', 'infinity-v0.3', 'infinity-v0.4', 'infinity-v0.5'];

/** A payload's JSON text: base64 in recorded files, bytes in the SDK's events. */
const text = (data: unknown) =>
  typeof data === 'string' ? unb64(data) : data instanceof Uint8Array ? Buffer.from(data).toString('utf8') : '';

/**
 * Markers of the patches 0.2 to 0.5 and the `TemporalChangeVersion` upserts that name them, in recorded (JSON) or SDK
 * events. 0.6's own marker is left out: it is asked as before, on its paths (a turn with several inputs queued).
 */
function patchEvents(events: readonly JsonEvent[]): number {
  return events.filter((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_patch') {
      const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
      return OLD_PATCHES.includes((JSON.parse(text(data)) as { id: string }).id);
    }
    const version = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields
      ?.TemporalChangeVersion as JsonPayload | undefined;
    return version !== undefined && OLD_PATCHES.some((p) => text(version.data).includes(`"${p}"`));
  }).length;
}

const recorded = (release: string) =>
  readdirSync(join(HISTORIES, release))
    .filter((f) => f.endsWith('.json'))
    .map((file) => ({
      name: `${release}/${file}`,
      history: JSON.parse(readFileSync(join(HISTORIES, release, file), 'utf8')) as JsonHistory,
    }));

const replay = (name: string, history: JsonHistory) =>
  Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: name },
    history,
    workflowIdOfHistory(history),
  );

describe('the SDK and markers the code no longer asks for', () => {
  it('replays every 0.5 history, markers and all, as a thread started with the option', async () => {
    const cases = recorded('v0.5');
    // The finding rests on histories that do have the markers.
    expect(cases.filter((c) => patchEvents(c.history.events) > 0).length).toBeGreaterThan(20);
    for (const c of cases) await replay(`${c.name} with baseRelease`, withStartOptions(c.history, WITH_OPTION));
  }, 180_000);

  it('reads the option from the start input on replay: a 0.1 history under it diverges', async () => {
    // Control: the rewrite reaches the workflow. Release 0.1's busy flood, replayed with 0.2's rules on, diverges.
    const flood = recorded('v0.1').find((c) => c.name.endsWith('/flood-busy-thread.json'))!;
    await replay(flood.name, flood.history);
    await expect(replay(flood.name, withStartOptions(flood.history, WITH_OPTION))).rejects.toMatchObject({
      name: 'DeterminismViolationError',
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

  /** Every run of a workflow, newest first, following `continuedExecutionRunId` back to the first. */
  async function runs(temporal: Client, workflowId: string) {
    const out: { runId?: string; events: JsonEvent[]; args: { options?: ThreadOptions } }[] = [];
    let runId: string | undefined;
    for (;;) {
      const history = await temporal.workflow.getHandle(workflowId, runId).fetchHistory();
      const events = (history.events ?? []) as unknown as JsonEvent[];
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const data = started?.input?.payloads?.[0]?.data;
      const args = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { options?: ThreadOptions }) : {};
      out.push({ runId, events, args });
      runId = started?.continuedExecutionRunId ?? undefined;
      if (!runId) return out;
    }
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

  /** Whether the first patch marker comes before the first local slice's marker (in the first task, that is). */
  const markerBeforeFirstSlice = (events: readonly JsonEvent[]) => {
    const marker = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    const slice = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    return marker !== -1 && (slice === -1 || marker < slice);
  };

  const hasSlice = (events: readonly JsonEvent[]) =>
    events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');

  /** The ids of the patch markers in `events`, in order. */
  const patchIds = (events: readonly JsonEvent[]) =>
    events
      .map((e) => e.markerRecordedEventAttributes)
      .filter((m) => m?.markerName === 'core_patch')
      .map((m) => (JSON.parse(text(m!.details?.['patch-data']?.payloads?.[0]?.data)) as { id: string }).id);

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
