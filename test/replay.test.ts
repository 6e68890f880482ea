/**
 * The replay gate: every Temporal history recorded with a released version of the thread workflow
 * (`test/fixtures/histories/<release>/`) replays against the current workflow code without nondeterminism.
 * Released sets are never re-recorded; a workflow change that breaks one must go behind `patched()`
 * (docs/upgrading.md). New scenarios are recorded into the set of the release being prepared
 * (`RECORD_HISTORIES=<release> npm run record-histories`).
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

it('has the v0.1 release set and recorded histories in every set', () => {
  expect(releases).toContain('v0.1');
  for (const release of releases) expect(cases.filter((c) => c.release === release).length).toBeGreaterThan(0);
  expect(cases.filter((c) => c.release === 'v0.1').length).toBeGreaterThanOrEqual(24);
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
 * start event names), in a fraction of the time (298 histories in ~7 s instead of ~50 s). A failure names every
 * history that did not replay and why.
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
 * The negative control: the same workflow code with release 0.2's changes always on (no `patched()`), bundled with
 * `src/workflows/patches.ts` swapped for a stub. The gate must catch it on the 0.1 histories those changes touch.
 */
it('catches the 0.2 changes made without patched() on the 0.1 histories', async () => {
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
  const failed = await replaySet(
    { code },
    cases.filter((c) => c.release === 'v0.1'),
    'v0.1 unpatched',
  );
  for (const f of failed) expect(f.error.name, f.name).toBe('DeterminismViolationError');
  const failures = failed.map((f) => f.file);
  // Continue-as-new while busy changes the flood's commands; the poison history fails the same way under 0.2 rules.
  expect(failures).toContain('flood-busy-thread.json');
}, 120_000);

/**
 * A thread started by hand is named by its workflow id (decision 58), so its history replays only under that id: the
 * gate and the `replay` command take it from the start event. Under another id the signal handler takes another path.
 */
it('replays a hand-started thread under the workflow id its start event names, and only there', async () => {
  const history: unknown = JSON.parse(readFileSync(join(root, 'v0.4', 'hand-started-thread.json'), 'utf8'));
  const workflowId = workflowIdOfHistory(history);
  expect(workflowId).toMatch(/-bare$/);
  const options = { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: 'hand-started' };
  await Worker.runReplayHistory(options, history, workflowId);
  await expect(Worker.runReplayHistory(options, history, 'another-id')).rejects.toMatchObject({
    name: 'DeterminismViolationError',
  });
});
