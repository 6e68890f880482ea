/**
 * The Raspberry Pi 5 budget: put the benchmark (and every process it starts afterwards) into a cgroup v2 with
 * `memory.max`, where the machine lets us; otherwise the run enforces the budget by measurement.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Budget =
  { mode: 'cgroup'; path: string; bytes: number } | { mode: 'measured'; bytes: number; why: string } | { mode: 'none' };

export function enterMemoryBudget(bytes: number): Budget {
  const root = '/sys/fs/cgroup';
  try {
    const controllers = readFileSync(join(root, 'cgroup.controllers'), 'utf8');
    if (!controllers.split(/\s+/).includes('memory')) throw new Error('memory controller not available');
    const path = join(root, `infinity-bench-${process.pid}`);
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'memory.max'), String(bytes));
    writeFileSync(join(path, 'cgroup.procs'), String(process.pid));
    return { mode: 'cgroup', path, bytes };
  } catch (e) {
    return { mode: 'measured', bytes, why: e instanceof Error ? e.message : String(e) };
  }
}
