/**
 * The replay gate: every Temporal history recorded with a released version of the thread workflow
 * (`test/fixtures/histories/<release>/`) replays against the current workflow code without nondeterminism.
 * Released sets are never re-recorded; a workflow change that breaks one must go behind `patched()`
 * (docs/upgrading.md). New scenarios are recorded into the set of the release being prepared
 * (`RECORD_HISTORIES=<release> npm run record-histories`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
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

it.each(cases)('replays $name', async ({ release, file, name }) => {
  const history: unknown = JSON.parse(readFileSync(join(root, release, file), 'utf8'));
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: name }, history);
});
