/**
 * Decision 79. Temporal's worker (SDK 1.24) delivers a local activity's result one workflow task late when a query
 * arrives while the local activity runs: the task completes with the activity's marker, and the workflow sees the
 * result only in the next task. On replay the result comes in the first task, so a `patched()` first asked after such
 * a result is asked a task earlier than its marker, and the replay fails (TMPRL1100). A thread's slice is a local
 * activity and users query threads (the UI, `status()`), so threads meet this every day.
 *
 * Threads of this build ask one patch first thing and none after (0.11's rules), so their histories replay. On the frozen 0.10
 * bundle, a slice refused for provider capacity asked 0.7's patch after its result, and threads whose refusal came a
 * task late did not replay (the history of decision 78).
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
  markerRecordedEventAttributes?: { markerName?: string | null } | null;
}
const typeOf = (e: Event) => String(e.eventType);
const isLocalActivityMarker = (e: Event) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity';
const isPatchMarker = (e: Event) => e.markerRecordedEventAttributes?.markerName === 'core_patch';

/** Local activity results the worker delivered a task late: a task that ends with the marker, a new one at once. */
const lateResults = (events: Event[]) =>
  events.filter((e, i) => isLocalActivityMarker(e) && /WORKFLOW_TASK_SCHEDULED|^5$/.test(typeOf(events[i + 1] ?? {})))
    .length;

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
            const s = await sys.client.thread(id).status();
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
    outcome.late += lateResults(events);
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

describe('queries while slices run', () => {
  const thisBuild = system();
  const release010 = system(V010_BUNDLE);

  it('leave every thread of this build replayable: no patch is asked after a slice', async () => {
    const outcome = await queriedThroughRefusals(await thisBuild(), inject('workflowBundlePath'));
    expect(outcome.notReplayed).toEqual([]);
    expect(outcome.patchMarkersAfterSlices).toBe(0);
    // The hazard did happen: some results came a task late.
    expect(outcome.late).toBeGreaterThan(0);
  }, 120_000);

  it('left threads of 0.10 that met a late refusal unreplayable (the bug this build avoids)', async () => {
    const outcome = await queriedThroughRefusals(await release010(), V010_BUNDLE);
    expect(outcome.late).toBeGreaterThan(0);
    expect(outcome.notReplayed.length).toBeGreaterThan(0);
    expect(outcome.notReplayed.join('\n')).toMatch(/TMPRL1100.*infinity-v0\.7/);
  }, 120_000);
});
