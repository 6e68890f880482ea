/**
 * The worker processes of one fleet (`bench/worker-process.ts`), all polling the same task queue: started together,
 * their IPC batches delivered to one handler, stopped together.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { DriverToWorker, WorkerToDriver } from './worker-messages';

/** What every worker process of the fleet gets in its environment (see `bench/worker-process.ts`). */
export interface WorkerEnv {
  DESIGN: string;
  TEMPORAL_ADDRESS: string;
  TASK_QUEUE: string;
  /** A SQLite file path or a `postgres://` URL. */
  STORE: string;
  BUNDLE_PATH: string;
  MAX_CACHED: string;
  ACTIVITY_SLOTS: string;
  /** `ours`' workflow task slots (default 100, as the baselines'). */
  WORKFLOW_SLOTS?: string;
  /** `ours`' CPU target (`resourceTargets.cpu`), when the run has one. */
  CPU_TARGET?: string;
  /** `ours`' store item cache bound in bytes (`itemCacheBytes`), when the run sets one. */
  ITEM_CACHE_BYTES?: string;
}

export class WorkerProcesses {
  private readonly children: ChildProcess[] = [];
  private gcWaiters: (() => void)[] = [];

  constructor(
    private readonly label: string,
    private readonly onMessage: (m: WorkerToDriver) => void,
  ) {}

  get pids(): number[] {
    return this.children.flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
  }

  /** Starts `n` worker processes; resolves when every one is ready. */
  async start(n: number, env: WorkerEnv): Promise<void> {
    const nodeArgs = process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []; // e.g. --cpu-prof
    const script = join(__dirname, '..', 'worker-process.ts');
    for (let i = 0; i < n; i++) {
      const child = spawn(process.execPath, ['--expose-gc', ...nodeArgs, '--import', 'tsx', script], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, ...env },
      });
      this.children.push(child);
    }
    await Promise.all(this.children.map((c) => this.ready(c)));
  }

  /** Resolves when `child` says it is ready; its other messages go to `onMessage`. */
  private ready(child: ChildProcess): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`${this.label} worker exited with ${code}`)));
      child.on('message', (batch: WorkerToDriver[]) => {
        for (const m of batch) {
          if (m.k === 'ready') resolve();
          else if (m.k === 'gc-done') this.gcWaiters.shift()?.();
          else this.onMessage(m);
        }
      });
    });
  }

  /** To the first worker: the one that holds a blocking agent's waiting activity (that design runs one process). */
  sendFirst(m: DriverToWorker): void {
    this.children[0]?.send(m);
  }

  /** Asks every worker to collect garbage; resolves when all have. */
  async gc(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((r) => {
            this.gcWaiters.push(r);
            c.send({ k: 'gc' } satisfies DriverToWorker);
          }),
      ),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map(stopChild));
  }
}

/** SIGTERM (the worker shuts down), SIGKILL after 15 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t);
}
