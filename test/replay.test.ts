/**
 * Recorded Temporal histories of the runtime's scenarios replay against the current workflow code without
 * nondeterminism. Re-record with `npm run record-histories` after an intentional, versioned workflow change.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { expect, inject, it } from 'vitest';

const dir = join(__dirname, 'fixtures', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

it('has recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(10);
});

it.each(files)('replays %s', async (file) => {
  const history: unknown = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: file }, history);
});
