/**
 * Workers that run a release's frozen workflow code (test/fixtures/bundles/<release>/) or this checkout's, for the
 * tests of upgrades and of `migrate`: in this process (one per task queue: the SDK refuses a second one), or in a
 * process of their own (test/fixtures/upgrade-worker.ts), as one build of a rolling deploy.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { ModelProvider } from '../src/model/provider';
import type { Tool } from '../src/tools/tool';
import { createAgentWorker } from '../src/worker/create-worker';
import { releaseBundle, type TestSystem } from './helpers';

const FAST = { unexpectedEndWaitMs: 50, transientWaitMs: 50, rateLimitWaitMs: 50 };

/** The frozen bundle of `release` (`v0.11`), or this checkout's (undefined). */
export const bundlePath = (release?: string): string =>
  release ? releaseBundle(release) : inject('workflowBundlePath');

export interface RunningWorker {
  stop(): Promise<void>;
}

/** A worker of `sys`'s task queue in this process, on `release`'s workflow code (default: this checkout's). */
export async function bundleWorker(
  sys: Pick<TestSystem, 'connection' | 'taskQueue' | 'store'>,
  model: ModelProvider,
  tools: Tool[],
  release?: string,
): Promise<RunningWorker> {
  const w = await createAgentWorker({
    connection: sys.connection,
    taskQueue: sys.taskQueue,
    store: sys.store,
    model,
    tools,
    completionPolicy: FAST,
    workflowBundle: { codePath: bundlePath(release) },
  });
  const running = w.run();
  return {
    async stop() {
      w.shutdown();
      await running;
    },
  };
}

export interface WorkerProcess extends RunningWorker {
  child: ChildProcess;
}

/**
 * test/fixtures/upgrade-worker.ts in a process of its own, running `bundle` with this checkout's activities, the tree
 * script and its tools, on the SQLite store at `storePath`; `build` names it (its worker identity). Resolves once it
 * polls. `stop` ends it as a deploy does: SIGTERM, SIGKILL if it lingers.
 */
export async function workerProcess(options: {
  taskQueue: string;
  storePath: string;
  bundle: string;
  build: string;
}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures', 'upgrade-worker.ts')], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: options.taskQueue,
      STORE_PATH: options.storePath,
      BUNDLE_PATH: options.bundle,
      BUILD: options.build,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/^READY$/m.test(out)) resolve();
    });
    void exited.then(() => reject(new Error(`build ${options.build} exited before it was ready: ${out}`)));
  });
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
