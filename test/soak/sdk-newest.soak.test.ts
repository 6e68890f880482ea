/**
 * The late-resolution guard on the pinned SDK and on the newest published one (issue 39 §4, decisions 79–81).
 *
 * The probe (`bench/probes/late-resolution/probe.ts`) runs a minimal workflow, a local activity and then a patch and a
 * timer, ten times, in 20 workflows queried without pause: as it is, with updates sent without pause too, and with
 * updates and no patch (the variant no workflow code can avoid). It counts local activity results the worker delivered
 * a workflow task late, and histories that fail to replay. SDK 1.23.0 and 1.24.0 show both; 1.22.0, which package.json
 * pins, shows neither (bench/results/sdk-newest-2026-12-06.md).
 *
 * - **Pinned SDK:** no result late, no patch marker a task late, every history replays. A failure here means the pinned
 *   SDK (or the server) now shows the behaviour, which the pin exists to avoid.
 * - **Newest SDK** (the highest release of `@temporalio/worker` on the configured npm registry, installed into
 *   `.cache/sdk-newest/` by `scripts/sdk-newest.ts`, never into the project's node_modules): the test prints what the
 *   probe saw, and **fails when the newest SDK no longer shows the behaviour**: no result late and every history
 *   replayed, in every run. That failure is the news the guard exists for, "a release may have fixed it, the pin may
 *   be able to move": its message points to the exit criteria (docs/upgrading.md, "Exit criteria for the SDK pin";
 *   docs/upstream/sdk-late-local-activity-result.md). Passing while the behaviour is there keeps the soak tier green
 *   for as long as nothing can be done. When the newest release is the pinned one (a future pin), there is nothing to
 *   compare and the test says so and passes.
 * - A registry that cannot be reached fails the test: a guard that quietly skipped would not be seen either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../bench/probes/late-resolution/probe';
import { newestSdkVersion, pinnedSdkVersion, prepareProbe, runProbeAt } from '../../scripts/sdk-newest';
import { startDevServer, type DevServer } from '../../src/devserver/server';

/** 20 workflows × 10 local activities, queried without pause, each activity failing; then with updates, with no patch. */
const VARIANTS = {
  'query fail': ['20', '10', 'query', 'fail'],
  'query fail update': ['20', '10', 'query', 'fail', 'update'],
  'query fail update nopatch': ['20', '10', 'query', 'fail', 'update', 'nopatch'],
};
const RUNS = 2;

/** A server of its own: the figures should not depend on what other soak files put on the shared one. */
let server: DevServer;
beforeAll(async () => {
  server = await startDevServer({ ui: false });
});
afterAll(() => server?.stop());

async function probe(version: string): Promise<{ variant: string; result: ProbeResult }[]> {
  const path = prepareProbe(version, (l) => console.log(l));
  const outcomes: { variant: string; result: ProbeResult }[] = [];
  for (const [variant, args] of Object.entries(VARIANTS))
    for (let run = 1; run <= RUNS; run++) {
      const result = await runProbeAt(path, server.address, args);
      expect(Object.values(result.packages), 'the probe ran on the SDK asked for').toEqual(
        Object.values(result.packages).map(() => version),
      );
      outcomes.push({ variant, result });
    }
  return outcomes;
}

const line = ({ variant, result: r }: { variant: string; result: ProbeResult }) =>
  `  ${variant.padEnd(26)} ${r.workflows}×${r.iterations}: ${r.lateResults} results late, ` +
  `${r.patchesATaskLate} patches a task late, ${r.notReplayed}/${r.workflows} histories not replayed` +
  (r.notReplayed ? ` (${JSON.stringify(r.errors)})` : '');

describe('the late-resolution guard', () => {
  it('on the pinned SDK: no local activity result comes a task late, and every history replays', async () => {
    const pinned = pinnedSdkVersion();
    const outcomes = await probe(pinned);
    console.log([`late-resolution probe on the pinned SDK ${pinned}:`, ...outcomes.map(line)].join('\n'));
    for (const { variant, result } of outcomes) {
      expect(result.sdk).toBe(pinned);
      expect({ variant, late: result.lateResults, patches: result.patchesATaskLate, notReplayed: result.notReplayed })
        // `firstError` in the message: what the replay met, should it fail.
        .toEqual({ variant, late: 0, patches: 0, notReplayed: 0 });
    }
  }, 900_000);

  it('on the newest published SDK: reports whether the behaviour is still there, and fails once it is not', async () => {
    const pinned = pinnedSdkVersion();
    const newest = newestSdkVersion();
    if (newest === pinned) {
      console.log(`the newest published SDK is the pinned one (${pinned}): nothing to compare`);
      return;
    }
    const outcomes = await probe(newest);
    const shows = outcomes.filter(({ result: r }) => r.lateResults > 0 || r.patchesATaskLate > 0 || r.notReplayed > 0);
    console.log(
      [
        `late-resolution probe on the newest published SDK ${newest} (pinned: ${pinned}):`,
        ...outcomes.map(line),
        shows.length > 0
          ? `  => ${newest} STILL delivers local activity results a task late (${shows.length} of ${outcomes.length} runs): the pin stays.`
          : `  => ${newest} delivered NO result late and every history replayed in ${outcomes.length} runs: the pin may be able to move.`,
      ].join('\n'),
    );
    expect(
      shows.length,
      `SDK ${newest} no longer shows the late local activity result in ${outcomes.length} runs of the probe. ` +
        'Check the exit criteria for the SDK pin (docs/upgrading.md) before moving it, and update this guard.',
    ).toBeGreaterThan(0);
  }, 900_000);
});
