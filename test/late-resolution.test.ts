/**
 * Decisions 79 and 81. Temporal's TypeScript SDK 1.23 and 1.24 deliver a local activity's result one workflow task late
 * when a query arrives while the local activity runs: the task completes with the activity's marker, and the workflow
 * sees the result only in the next task. On replay the result comes in the first task, so a `patched()` first asked
 * after it, or an update accepted in the late task, is met in another order, and the replay fails (TMPRL1100). A
 * thread's slice is a local activity, and users query threads (the UI, `status()`) and wait on them (`waitForIdle`, an
 * update), so on those SDKs threads met this every day (the histories in test/fixtures/open-bugs/).
 *
 * This build runs on SDK 1.22.0, which delivers no result late (decision 81), and asks no patch after a slice
 * (decision 79). Threads queried without pause through refused slices, each waited on with `waitForIdle`, must replay,
 * on this build and on the frozen 0.10 bundle; and no result may come a task late, which is what an SDK upgrade that
 * brings the behaviour back would break first.
 */
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { eventually, startTestSystem, type TestSystem, uid } from './helpers';

const LIMITS = { key: 'late-resolution', rpm: 100_000, tpm: 100_000_000, concurrency: 64 };
const THREADS = 12;
const ROUNDS = 3;
const V010_BUNDLE = join(__dirname, 'fixtures', 'bundles', 'v0.10', 'workflows-bundle.js');

interface Event {
  eventType?: string | number | null;
  markerRecordedEventAttributes?: { markerName?: string | null; failure?: unknown } | null;
}
const typeOf = (e: Event) => String(e.eventType);
const isLocalActivityMarker = (e: Event) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity';
const isPatchMarker = (e: Event) => e.markerRecordedEventAttributes?.markerName === 'core_patch';

/**
 * Refused slices whose result the worker delivered a task late: the thread answers a refusal with a timer (waiting for
 * capacity), in the same task when the result comes in it, in the next one when it comes late. So a refused slice's
 * marker with no timer among the commands after it, before the next task, came late.
 */
const lateRefusals = (events: Event[]) =>
  events.filter((e, i) => {
    if (!isLocalActivityMarker(e) || !e.markerRecordedEventAttributes?.failure) return false;
    const rest = events.slice(i + 1);
    const nextTask = rest.findIndex((n) => /WORKFLOW_TASK_SCHEDULED|^5$/.test(typeOf(n)));
    return !rest.slice(0, nextTask === -1 ? undefined : nextTask).some((n) => /TIMER_STARTED|^17$/.test(typeOf(n)));
  }).length;

interface Outcome {
  late: number;
  notReplayed: string[];
  patchMarkersAfterSlices: number;
}

/**
 * Threads whose first slice is refused for provider capacity (the key closed for a moment), each queried without pause
 * until it has answered; then every history is counted and replayed against the bundle that ran it.
 */
async function queriedThroughRefusals(sys: TestSystem, bundle: string): Promise<Outcome> {
  const ids = Array.from({ length: THREADS }, () => uid('late'));
  let querying = true;
  // Each thread queried without pause from before its start to the end (a query before the start fails: ignored).
  const queries = Promise.all(
    ids.map(async (id) => {
      while (querying)
        await sys.client
          .thread(id)
          .status()
          .catch(() => undefined);
    }),
  );
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      // Every slice of the round is refused at first: the key is closed for a moment.
      await sys.store.capacity.backoff(LIMITS.key, LIMITS, 1_000);
      await Promise.all(ids.map((id) => sys.client.thread(id).sendUserText(`hello ${round}`)));
      for (const id of ids)
        await eventually(
          async () => {
            // An update: one accepted in a late task is what decision 80 found.
            const s = await sys.client.thread(id).waitForIdle({ timeoutMs: 10_000 });
            return s.slices >= round && s.status === 'idle';
          },
          60_000,
          `${id} answered round ${round}`,
        );
    }
  } finally {
    querying = false;
    await queries;
  }
  const outcome: Outcome = { late: 0, notReplayed: [], patchMarkersAfterSlices: 0 };
  for (const id of ids) {
    const history = await sys.temporal.workflow.getHandle(id).fetchHistory();
    const events = (history.events ?? []) as Event[];
    outcome.late += lateRefusals(events);
    // Asked after a slice's result is what the late delivery breaks: nothing may be.
    const firstSlice = events.findIndex(isLocalActivityMarker);
    outcome.patchMarkersAfterSlices += events.slice(firstSlice).filter(isPatchMarker).length;
    try {
      await Worker.runReplayHistory({ workflowBundle: { codePath: bundle }, replayName: id }, history, id);
    } catch (e) {
      outcome.notReplayed.push(`${id}: ${/TMPRL1100[^"\\]*/.exec(String(e))?.[0] ?? String(e).slice(0, 300)}`);
    }
  }
  return outcome;
}

function system(bundle?: string) {
  let sys: TestSystem | undefined;
  afterAll(() => sys?.shutdown());
  return async () =>
    (sys ??= await startTestSystem({
      model: new ScriptedModel(() => ({ text: 'hi' })),
      limits: LIMITS,
      ...(bundle && { workflowBundlePath: bundle }),
    }));
}

describe('queries and waits while slices run', () => {
  const thisBuild = system();
  const release010 = system(V010_BUNDLE);

  it('leave every thread of this build replayable, with no result delivered late and no patch asked after a slice', async () => {
    const outcome = await queriedThroughRefusals(await thisBuild(), inject('workflowBundlePath'));
    expect(outcome.notReplayed).toEqual([]);
    expect(outcome.late, 'refusals the SDK delivered a task late (decision 81)').toBe(0);
    expect(outcome.patchMarkersAfterSlices).toBe(0);
  }, 120_000);

  it('leave threads of the frozen 0.10 bundle replayable too: on this SDK no result comes late', async () => {
    const outcome = await queriedThroughRefusals(await release010(), V010_BUNDLE);
    expect(outcome.notReplayed).toEqual([]);
    expect(outcome.late).toBe(0);
  }, 120_000);
});
