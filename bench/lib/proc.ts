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

/** CPU time (user + system) of a process in seconds, or 0 when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ (100 on Linux)
  } catch {
    return 0;
  }
}

/** The process and all its descendants (the dev server CLI may fork). */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const c of children) out.push(...processTree(c));
  } catch {
    // no children file or process gone
  }
  return out;
}

export function treeRss(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + rssBytes(p), 0);
}

export function treeCpu(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + cpuSeconds(p), 0);
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

/** Samples the RSS of named process trees at a fixed interval. */
export class RssSampler {
  readonly samples: RssSample[] = [];
  private timer?: NodeJS.Timeout;
  phase = 'start';
  idleAgents?: number;

  constructor(private readonly pids: () => Record<string, number | undefined>) {}

  sample(): RssSample {
    const rss: Record<string, number> = {};
    const cpu: Record<string, number> = {};
    for (const [role, pid] of Object.entries(this.pids())) {
      if (!pid) continue;
      // The driver is the parent of the other processes: count only itself.
      const self = role === 'driver';
      rss[role] = self ? process.memoryUsage.rss() : treeRss(pid);
      cpu[role] = self ? (process.cpuUsage().user + process.cpuUsage().system) / 1e6 : treeCpu(pid);
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
