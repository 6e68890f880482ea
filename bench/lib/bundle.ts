/** The thread workflow's bundle, written once per run so every worker process loads the same code without bundling. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { threadWorkflowsPath } from '../../src/worker/create-worker';

/** Bundles the thread workflow into `<dir>/bundle.js`; returns the file's path. */
export async function writeThreadBundle(dir: string): Promise<string> {
  const path = join(dir, 'bundle.js');
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('ERROR'),
  });
  writeFileSync(path, code);
  return path;
}
