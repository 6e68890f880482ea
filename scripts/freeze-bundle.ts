/**
 * `npx tsx scripts/freeze-bundle.ts v0.3`: writes this checkout's thread workflow bundle to
 * `test/fixtures/bundles/<release>/workflows-bundle.js`, the code a release's workers run, for later upgrade tests.
 * Refuses to overwrite: a released bundle is never rebuilt.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { threadWorkflowsPath } from '../src/worker/create-worker';

async function main(): Promise<void> {
  const release = process.argv[2];
  if (!release || !/^v\d+\.\d+$/.test(release)) throw new Error('usage: freeze-bundle.ts v<major>.<minor>');
  const dir = join(__dirname, '..', 'test', 'fixtures', 'bundles', release);
  const file = join(dir, 'workflows-bundle.js');
  if (existsSync(file)) throw new Error(`${file} exists: a released bundle is never rebuilt`);
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('WARN'),
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, code);
  console.log(`${file}: ${code.length} bytes`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
