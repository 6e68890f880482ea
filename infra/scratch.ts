/**
 * A run's scratch folder (a test tier's dev server database, bundles, every test file's temp dirs; a benchmark's
 * servers and stores): made under the system temp dir, removed when the run ends. A test run leaves hundreds of
 * megabytes there, so a machine that runs the suites many times a day (a developer's, or CI's) fills its disk
 * unless every run takes its scratch with it. The folder holds an `owner.pid` file, so a run that was killed before it
 * could clean up is swept by the next run with the same prefix. A test tier's files put their temp dirs in it too
 * (test/setup-runtime.ts points their `TMPDIR` at `<dir>/tmp`).
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onExit } from 'signal-exit';

export interface RunScratch {
  /** The folder. */
  dir: string;
  /** Removes the folder (unless `INFINITY_KEEP_SCRATCH=1`). Idempotent. */
  remove(): void;
}

/**
 * Makes `<tmpdir>/<prefix>XXXXXX` after sweeping folders of that prefix whose owner process is gone.
 * @example
 * const scratch = runScratch('infinity-test-');
 * try { ... } finally { scratch.remove(); }
 */
export function runScratch(prefix: string): RunScratch {
  sweepOrphans(prefix);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Others may pass through but not list (0711): as root, a PostgreSQL started from inside runs as the `postgres` user,
  // which must reach its data dir (startLocalPostgres opens that one dir up).
  chmodSync(dir, 0o711);
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  const keep = process.env.INFINITY_KEEP_SCRATCH === '1';
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    cancelOnExit();
    if (keep) {
      // No owner any more: the next run's sweep leaves it alone.
      rmSync(join(dir, 'owner.pid'), { force: true });
      console.log(`scratch kept (INFINITY_KEEP_SCRATCH=1): ${dir}`);
    } else rmSync(dir, { recursive: true, force: true });
  };
  // A run that ends by process.exit() or a signal skips its teardown: the folder still goes.
  const cancelOnExit = onExit(() => remove());
  return { dir, remove };
}

/** Removes `<tmpdir>/<prefix>*` folders whose `owner.pid` names a process that no longer runs. */
function sweepOrphans(prefix: string): void {
  const root = tmpdir();
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    let pid: number;
    try {
      pid = Number(readFileSync(join(root, name, 'owner.pid'), 'utf8'));
    } catch {
      continue; // not one of ours, or not ours to judge
    }
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) rmSync(join(root, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
