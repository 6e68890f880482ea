/**
 * A worker in a process of its own (`fixtures/worker-process.ts`) that a crash test can SIGKILL: its output lines, a
 * wait for a line, and its exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import type { ModelProvider } from '../src/model/provider';
import { startTestSystem, type TestSystem } from './helpers';

export interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  /** Resolves once a line matches (at once if one did already). */
  waitFor(re: RegExp, ms?: number): Promise<void>;
  exited: Promise<void>;
}

/**
 * Starts a worker process on `taskQueue` with the store `store` (a SQLite file or a postgres:// URL); the caller kills
 * it. It prints `READY` once it polls.
 */
export function startWorkerProcess(
  taskQueue: string,
  store: string,
  extraEnv: Record<string, string> = {},
): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures', 'worker-process.ts')], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: taskQueue,
      STORE_PATH: store,
      BUNDLE_PATH: inject('workflowBundlePath'),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const w of waiters.filter((w) => w.re.test(line))) w.resolve();
    }
  });
  const waitFor = (re: RegExp, ms = 60_000) =>
    new Promise<void>((resolve, reject) => {
      if (lines.some((l) => re.test(l))) return resolve();
      const t = setTimeout(
        () => reject(new Error(`worker never printed ${re}; got ${lines.slice(-5).join(' | ')}`)),
        ms,
      );
      waiters.push({ re, resolve: () => (clearTimeout(t), resolve()) });
    });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, lines, waitFor, exited };
}

/**
 * The setup a crash test shares: a test system that runs no worker itself (it starts threads and reads the store the
 * worker processes write), and `startWorker`, whose processes are SIGKILLed after each test. Call at a file's top level.
 */
export function workerProcessSuite(model: ModelProvider): {
  sys: () => TestSystem;
  startWorker(extraEnv?: Record<string, string>): WorkerProcess;
} {
  let sys: TestSystem | undefined;
  const procs: ChildProcess[] = [];
  beforeAll(async () => {
    sys = await startTestSystem({ model, noWorker: true });
  });
  afterEach(() => {
    for (const p of procs.splice(0)) if (p.exitCode === null) p.kill('SIGKILL');
  });
  afterAll(async () => {
    await sys?.shutdown();
  });
  return {
    sys: () => sys!,
    startWorker(extraEnv = {}) {
      const worker = startWorkerProcess(sys!.taskQueue, sys!.storePath, extraEnv);
      procs.push(worker.child);
      return worker;
    },
  };
}
