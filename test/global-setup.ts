/**
 * One real Temporal dev server for the whole run (installed on first use), and the thread workflows bundled once
 * so every worker in every test file starts fast.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { ProvidedContext } from 'vitest';
import { startDevServer, type DevServer } from '../src/devserver/server';
import { threadWorkflowsPath } from '../src/worker/create-worker';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    scratchDir: string;
  }
}

let server: DevServer | undefined;

interface SetupContext {
  provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]): void;
}

export default async function setup(project: SetupContext): Promise<() => Promise<void>> {
  const scratchDir = mkdtempSync(join(tmpdir(), 'infinity-test-'));
  server = await startDevServer({
    ui: false,
    dbFilename: join(scratchDir, 'temporal.sqlite'),
    log: (l) => console.log(l),
  });
  const { code } = await bundleWorkflowCode({ workflowsPath: threadWorkflowsPath(), logger: new DefaultLogger('WARN') });
  const workflowBundlePath = join(scratchDir, 'workflows-bundle.js');
  writeFileSync(workflowBundlePath, code);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('scratchDir', scratchDir);
  return async () => {
    await server?.stop();
  };
}
