/** PostgreSQL's processes seen from /proc: the postmaster of a data directory, its backends by database. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuSeconds, processTree } from './proc';

/** The postmaster's pid, from the first line of `postmaster.pid` in its data directory (undefined when not running). */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The database a PostgreSQL process serves, from its process title (`postgres: <user> <database> <host> <state>`,
 * `postgres: autovacuum worker <database>`), or undefined for the postmaster and the auxiliary processes.
 */
export function backendDatabase(pid: number): string | undefined {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    const backend = /^postgres: \S+ (\S+) \S+\(\d+\)/.exec(title) ?? /^postgres: autovacuum worker (\S+)/.exec(title);
    return backend?.[1];
  } catch {
    return undefined;
  }
}

/** CPU seconds of each live backend of the postmaster, with the database it serves. */
export function backendCpu(postmaster: number): Map<number, { database: string; cpu: number }> {
  const out = new Map<number, { database: string; cpu: number }>();
  for (const pid of processTree(postmaster).slice(1)) {
    const database = backendDatabase(pid);
    if (database !== undefined) out.set(pid, { database, cpu: cpuSeconds(pid) });
  }
  return out;
}

/**
 * CPU seconds the backends used between two `backendCpu` snapshots, summed per group of databases (`groupOf` names a
 * database's group). Backends that exited in between are missing: their CPU went to the postmaster's reaped total.
 */
export function backendCpuDelta(
  before: Map<number, { database: string; cpu: number }>,
  after: Map<number, { database: string; cpu: number }>,
  groupOf: (database: string) => string,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [pid, { database, cpu }] of after) {
    const group = groupOf(database);
    out[group] = (out[group] ?? 0) + cpu - (before.get(pid)?.cpu ?? 0);
  }
  return out;
}
