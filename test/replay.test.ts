/**
 * The replay gate: every Temporal history recorded with a release of the supported window (decision 85: this release
 * and the two before it; `test/fixtures/histories/<release>/` holds the window's sets only) replays against the current
 * workflow code without nondeterminism. Released sets are never re-recorded; a workflow change that breaks one must go
 * behind `patched()` (docs/upgrading.md). New scenarios are recorded into the set of the release being prepared
 * (`RECORD_HISTORIES=<release> npm run record-histories`). Older releases' threads are moved by the bridge release
 * (0.12) before they reach this one: test/migrate.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import webpack from 'webpack';
import { threadWorkflowsPath } from '../src/worker/create-worker';
import { workflowIdOfHistory } from '../src/cli/replay-history';
import { expect, inject, it } from 'vitest';

const root = join(__dirname, 'fixtures', 'histories');
const releases = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const cases = releases.flatMap((release) =>
  readdirSync(join(root, release))
    .filter((f) => f.endsWith('.json'))
    .map((file) => ({ release, file, name: `${release}/${file}` })),
);

/** The sets of the window's releases that are out (0.13's own is recorded when it is cut). */
const WINDOW = ['v0.11', 'v0.12'];

it("has the window's release sets, and only those, each with recorded histories", () => {
  expect(releases).toEqual(WINDOW);
  for (const release of releases) expect(cases.filter((c) => c.release === release).length).toBeGreaterThan(50);
});

/** Replays `set` in one replay worker (`runReplayHistories`); the histories that did not replay, each with its error. */
async function replaySet(
  bundle: { codePath: string } | { code: string },
  set: readonly { release: string; file: string; name: string }[],
  replayName: string,
): Promise<{ file: string; name: string; error: Error }[]> {
  const byId = new Map<string, (typeof set)[number]>();
  const histories = set.map((c) => {
    const json: unknown = JSON.parse(readFileSync(join(root, c.release, c.file), 'utf8'));
    const workflowId = workflowIdOfHistory(json) ?? c.name;
    expect(byId.has(workflowId), `${c.name}: a workflow id another history of the set has`).toBe(false);
    byId.set(workflowId, c);
    return { workflowId, history: historyFromJSON(json) };
  });
  const failed: { file: string; name: string; error: Error }[] = [];
  let replayed = 0;
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName }, histories)) {
    replayed += 1;
    const c = byId.get(r.workflowId)!;
    if (r.error) failed.push({ file: c.file, name: c.name, error: r.error });
  }
  expect(replayed).toBe(set.length);
  return failed;
}

/**
 * One replay worker per release set: the same check as one worker per history (each history under the workflow id its
 * start event names), in a fraction of the time. A failure names every history that did not replay and why.
 */
it.each(releases)('replays every recorded history of %s', async (release) => {
  const failed = await replaySet(
    { codePath: inject('workflowBundlePath') },
    cases.filter((c) => c.release === release),
    release,
  );
  expect(failed.map((f) => `${f.name}: ${f.error.message}`)).toEqual([]);
});

/**
 * The negative control: the same workflow code with 0.11's patch no longer asked at a run's first patch question, only
 * before its first local activity (`src/workflows/patches.ts` swapped for a stub with webpack's module replacement): the
 * mistake a retirement of patches could make. The gate must catch it: a run whose first patch question came before
 * other commands of its first local slice's task, or in an earlier task, holds the `infinity-v0.11` marker where
 * nothing asks for it.
 */
it("catches 0.11's patch asked at another point than its marker", async () => {
  const patches = join(__dirname, '..', 'src', 'workflows', 'patches.ts');
  const stub = join(__dirname, 'fixtures', 'unpatched', 'patches.ts');
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => {
      config.plugins = [
        ...(config.plugins ?? []),
        new webpack.NormalModuleReplacementPlugin(/[\\/]patches$/, (resource: { context: string; request: string }) => {
          if (join(resource.context, `${resource.request}.ts`) === patches) resource.request = stub;
        }),
      ];
      return config;
    },
  });
  const failed = await replaySet({ code }, cases, 'rules asked late');
  for (const f of failed) expect(f.error.name, f.name).toBe('DeterminismViolationError');
  for (const f of failed) expect(f.error.message, f.name).toContain('infinity-v0.11');
  const failures = failed.map((f) => f.name);
  // A thread started by hand asks 0.4's patch at its first status write, a task before its first slice; most threads
  // ask 0.2's at their first input signal, ahead of the commands that come before their first slice (the title memo,
  // an update's acceptance): 93 of the 121 histories fail so when this was written.
  for (const release of WINDOW)
    expect(failures).toEqual(
      expect.arrayContaining([`${release}/hand-started-thread.json`, `${release}/sync-tool.json`]),
    );
  expect(failures.length).toBeGreaterThan(cases.length / 2);
}, 120_000);

/**
 * A thread started by hand is named by its workflow id (decision 58), so its history replays only under that id: the
 * gate and the `replay` command take it from the start event. Under another id the signal handler takes another path.
 */
it('replays a hand-started thread under the workflow id its start event names, and only there', async () => {
  const history: unknown = JSON.parse(readFileSync(join(root, 'v0.12', 'hand-started-thread.json'), 'utf8'));
  const workflowId = workflowIdOfHistory(history);
  expect(workflowId).toMatch(/-bare$/);
  const options = { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'hand-started' };
  await Worker.runReplayHistory(options, history, workflowId);
  await expect(Worker.runReplayHistory(options, history, 'another-id')).rejects.toMatchObject({
    name: 'DeterminismViolationError',
  });
});
