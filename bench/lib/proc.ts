/** Resident memory of processes, read from /proc (Linux). */
import { readFileSync, statSync } from 'node:fs';

/** VmRSS of a process in bytes, or 0 when it is gone. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Proportional set size of a process in bytes (its shared pages divided among the processes that map them), or 0 when
 * it is gone. For processes that share memory, such as PostgreSQL's backends and their shared buffers, summed RSS
 * would count the shared pages once per process.
 */
export function pssBytes(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system) of a process in seconds, or 0 when it is gone. With `reaped`, also that of its children
 * that have exited and been waited for (cutime + cstime): e.g. PostgreSQL's backends of closed connections.
 */
export function cpuSeconds(pid: number, reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]); // utime + stime, in USER_HZ (100 on Linux)
    return (reaped ? own + Number(fields[13]) + Number(fields[14]) : own) / 100;
  } catch {
    return 0;
  }
}

/** The process and all its descendants (the dev server CLI may fork). */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    for (const c of children) out.push(...processTree(c));
  } catch {
    // no children file or process gone
  }
  return out;
}

/** CPU seconds the whole machine has been busy (all cores; not idle, not waiting on I/O), from /proc/stat. */
export function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / 100;
}

/** Resident bytes of the process tree; with `pss`, proportional set sizes (see `pssBytes`). */
export function treeRss(pid: number, pss = false): number {
  return processTree(pid).reduce((sum, p) => sum + (pss ? pssBytes(p) : rssBytes(p)), 0);
}

/** CPU seconds of the live process tree; with `reaped`, plus what its processes' exited children used. */
export function treeCpu(pid: number, reaped = false): number {
  return processTree(pid).reduce((sum, p) => sum + cpuSeconds(p, reaped), 0);
}

/** Size of a SQLite database with its WAL and shared-memory files. */
export function sqliteBytes(file: string): number {
  let total = 0;
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      total += statSync(f).size;
    } catch {
      // missing part
    }
  }
  return total;
}

export interface RssSample {
  t: number;
  /** Bytes per role (server, worker, driver). */
  rss: Record<string, number>;
  /** CPU seconds used so far per role. */
  cpu: Record<string, number>;
  /** Agents idle at that moment, when known. */
  idleAgents?: number;
  phase: string;
}

/** A role's processes: one process tree, or several summed (e.g. the worker processes of one fleet). */
export type RolePids = number | readonly number[] | undefined;

/** Samples the RSS of named process trees at a fixed interval. */
export class RssSampler {
  readonly samples: RssSample[] = [];
  private timer?: NodeJS.Timeout;
  phase = 'start';
  idleAgents?: number;

  /**
   * `reaped`: roles whose CPU includes their processes' exited children (see `cpuSeconds`); `pss`: roles whose memory
   * is their proportional set size rather than RSS (see `pssBytes`).
   */
  constructor(
    private readonly pids: () => Record<string, RolePids>,
    private readonly opts: { reaped?: readonly string[]; pss?: readonly string[] } = {},
  ) {}

  sample(): RssSample {
    const rss: Record<string, number> = {};
    const cpu: Record<string, number> = {};
    for (const [role, pid] of Object.entries(this.pids())) {
      const roots = (typeof pid === 'number' ? [pid] : (pid ?? [])).filter((p) => p > 0);
      if (roots.length === 0) continue;
      // The driver is the parent of the other processes: count only itself.
      const self = role === 'driver';
      const reaped = this.opts.reaped?.includes(role) ?? false;
      const pss = this.opts.pss?.includes(role) ?? false;
      rss[role] = self ? process.memoryUsage.rss() : roots.reduce((sum, p) => sum + treeRss(p, pss), 0);
      cpu[role] = self
        ? (process.cpuUsage().user + process.cpuUsage().system) / 1e6
        : roots.reduce((sum, p) => sum + treeCpu(p, reaped), 0);
    }
    const s: RssSample = { t: Date.now(), rss, cpu, phase: this.phase };
    if (this.idleAgents !== undefined) s.idleAgents = this.idleAgents;
    this.samples.push(s);
    return s;
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export const total = (s: RssSample) => Object.values(s.rss).reduce((a, b) => a + b, 0);
