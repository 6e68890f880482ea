/**
 * One cell of the scaling profile: on a fresh Temporal server, the same load on a new task queue served by N worker
 * processes of `ours` with a new conversation store, and the CPU and memory of every process group over it.
 */
import { join } from 'node:path';
import type { LocalPostgres } from '../../infra/postgres';
import { openConversationStore } from '../../src/store/open';
import { PostgresConversationStore } from '../../src/store/postgres';
import type { Config, ScalingConfig, ScalingServer, ScalingStore } from '../config';
import { Fleet } from '../lib/fleet';
import { backendCpu, backendCpuDelta } from '../lib/postgres-proc';
import { machineBusySeconds, type RssSample, type RssSampler } from '../lib/proc';
import { percentile } from '../lib/stats';

/** Process groups whose CPU and memory each cell records. */
export const GROUPS = ['server', 'workers', 'postgres', 'driver'] as const;
export type Group = (typeof GROUPS)[number];

export interface ScalingCell {
  server: ScalingServer;
  store: ScalingStore;
  workers: number;
  agents: number;
  turns: number;
  /** Whether every agent ended all its turns before the cell's timeout. */
  complete: boolean;
  turnsEnded: number;
  completions: number;
  seconds: number;
  completionsPerSecond: number;
  /** Tool result sent → next completion started. */
  latencyMs: { p50: number; p99: number; n: number };
  cpuMsPerCompletion: Record<Group, number>;
  /** CPU seconds per second of the measurement: how many of the machine's cores each group kept busy. */
  cores: Record<Group, number>;
  /** Cores busy with anything else on the machine (another program on a shared machine; the kernel's own work). */
  otherCores: number;
  /**
   * PostgreSQL's CPU ms per completion split by what its backends served: the Temporal server's databases (cluster),
   * the cell's conversation store, and the rest (background processes, backends that exited during the cell).
   */
  postgresCpuMsPerCompletion: { temporal: number; store: number; other: number };
  /** Peak resident bytes of each group over the measurement (PostgreSQL: proportional set size, shared buffers once). */
  rss: Record<Group, number>;
  /** The server's RSS once it served, before the cell's workers started. */
  serverRestRss: number;
  /** The group with the most CPU per completion. */
  bottleneck: Group;
  errors: string[];
}

/** A scaling profile's run, as `bench/scaling-run.ts` writes it to bench/results/<profile>-<timestamp>.json. */
export interface ScalingResults {
  profile: string;
  startedAt: string;
  finishedAt: string;
  machine: Record<string, unknown>;
  config: Config;
  /** PostgreSQL's proportional set size at the start of the run (each cell has its server's, `serverRestRss`). */
  restRss: { postgres: number };
  scaling: { cells: ScalingCell[] };
  rssTimeline: unknown[];
}

/** The Temporal server the cells run on. */
export interface ScalingTarget {
  kind: ScalingServer;
  address: string;
  pids: number[];
  /** Databases on the shared PostgreSQL that belong to the server (the cluster's persistence and visibility). */
  databases: string[];
}

/** What every cell shares: configuration, the shared PostgreSQL, the bundle, the sampler, the running fleet. */
export interface ScalingBench {
  cfg: Config;
  sc: ScalingConfig;
  work: string;
  bundlePath: string;
  postgres: LocalPostgres;
  postmaster: number;
  sampler: RssSampler;
  target?: ScalingTarget;
  fleet?: Fleet;
  progress: string;
}

/** A fresh conversation store for one cell, migrated: a SQLite file in the run's directory or a new database. */
async function cellStore(b: ScalingBench, name: string, store: ScalingStore): Promise<string> {
  const spec = store === 'sqlite' ? join(b.work, `${name}.sqlite`) : b.postgres.createDatabase(name);
  const s = openConversationStore(spec);
  if (s instanceof PostgresConversationStore) await s.migrate();
  await s.close();
  return spec;
}

/** Runs one cell on `target`, a server started for it (the caller stops it). */
export async function runCell(
  b: ScalingBench,
  target: ScalingTarget,
  store: ScalingStore,
  workers: number,
): Promise<ScalingCell> {
  const { cfg } = b;
  const serverRestRss = b.sampler.sample().rss.server ?? 0;
  const name = `store_${target.kind}_${store}_${workers}w_${Date.now()}`;
  const label = `${target.kind}/${store}/${workers}w`;
  b.sampler.phase = `${label} start`;
  const spec = await cellStore(b, name, store);
  const fleet = new Fleet({
    design: 'ours',
    address: target.address,
    store: spec,
    bundlePath: b.bundlePath,
    workers,
    maxCachedWorkflows: cfg.maxCachedWorkflows,
    activitySlots: 200,
  });
  b.fleet = fleet;
  try {
    await fleet.start();
    b.sampler.phase = `${label} warm-up`;
    b.progress = `${label}: warm-up, ${b.sc.warmupAgents} agents × 1 turn`;
    if (
      !(await within(fleet.runTurns(ids(`${label}-warm`, b.sc.warmupAgents), 1, cfg.toolDelayMs), b.sc.cellTimeoutMs))
    ) {
      throw new Error(
        `${label}: the warm-up did not finish within ${b.sc.cellTimeoutMs} ms (${fleet.errors.join('; ') || 'no error reported'})`,
      );
    }
    fleet.resetCounters();
    b.sampler.phase = label;
    b.progress = `${label}: ${cfg.agentsPerWave} agents × ${cfg.turns} turns`;
    const m = await measure(b, fleet, ids(label, cfg.agentsPerWave));
    return { ...cellResult(b, target, { store, workers, fleet, ...m, database: name }), serverRestRss };
  } finally {
    await fleet.stop();
    b.fleet = undefined;
  }
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}-${Date.now()}`);

/** Whether `work` finished within `ms` (it goes on, unobserved, when it did not). */
async function within(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const done = await Promise.race([work.then(() => true), timedOut]);
  clearTimeout(timer);
  return done;
}

interface Measurement {
  complete: boolean;
  seconds: number;
  c0: RssSample;
  c1: RssSample;
  /** The machine's busy CPU seconds over the measurement. */
  machineBusy: number;
  samples: RssSample[];
  pg0: ReturnType<typeof backendCpu>;
  pg1: ReturnType<typeof backendCpu>;
}

/** Runs the cell's load (bounded by the cell timeout) between two samples of every process group. */
async function measure(b: ScalingBench, fleet: Fleet, agentIds: string[]): Promise<Measurement> {
  const { cfg } = b;
  // The backends' snapshots inside the sampler's, so that their CPU is part of PostgreSQL's total over the window.
  const busy0 = machineBusySeconds();
  const c0 = b.sampler.sample();
  const pg0 = backendCpu(b.postmaster);
  const t0 = performance.now();
  const complete = await within(fleet.runTurns(agentIds, cfg.turns, cfg.toolDelayMs), b.sc.cellTimeoutMs);
  const seconds = (performance.now() - t0) / 1000;
  const pg1 = backendCpu(b.postmaster);
  const c1 = b.sampler.sample();
  const machineBusy = machineBusySeconds() - busy0;
  const samples = b.sampler.samples.filter((s) => s.t >= c0.t && s.t <= c1.t);
  return { complete, seconds, c0, c1, machineBusy, samples, pg0, pg1 };
}

function cellResult(
  b: ScalingBench,
  target: ScalingTarget,
  m: Measurement & { store: ScalingStore; workers: number; fleet: Fleet; database: string },
): Omit<ScalingCell, 'serverRestRss'> {
  const { fleet } = m;
  const n = Math.max(1, fleet.completions);
  const cpu = (g: Group) => (m.c1.cpu[g] ?? 0) - (m.c0.cpu[g] ?? 0);
  const perCompletion = (seconds: number) => (seconds * 1000) / n;
  const cpuMsPerCompletion = Object.fromEntries(GROUPS.map((g) => [g, perCompletion(cpu(g))])) as Record<Group, number>;
  const byDb = backendCpuDelta(m.pg0, m.pg1, (db) =>
    db === m.database ? 'store' : target.databases.includes(db) ? 'temporal' : 'other',
  );
  const pgTemporal = byDb.temporal ?? 0;
  const pgStore = byDb.store ?? 0;
  return {
    server: target.kind,
    store: m.store,
    workers: m.workers,
    agents: b.cfg.agentsPerWave,
    turns: b.cfg.turns,
    complete: m.complete && fleet.turnsEnded === b.cfg.agentsPerWave * b.cfg.turns,
    turnsEnded: fleet.turnsEnded,
    completions: fleet.completions,
    seconds: m.seconds,
    completionsPerSecond: fleet.completions / m.seconds,
    latencyMs: {
      p50: percentile(fleet.latencies, 50),
      p99: percentile(fleet.latencies, 99),
      n: fleet.latencies.length,
    },
    cpuMsPerCompletion,
    cores: Object.fromEntries(GROUPS.map((g) => [g, cpu(g) / m.seconds])) as Record<Group, number>,
    otherCores: Math.max(0, (m.machineBusy - GROUPS.reduce((s, g) => s + cpu(g), 0)) / m.seconds),
    postgresCpuMsPerCompletion: {
      temporal: perCompletion(pgTemporal),
      store: perCompletion(pgStore),
      // Never below 0: the totals and the backends are read at slightly different moments, in ticks of 10 ms.
      other: Math.max(0, perCompletion(cpu('postgres') - pgTemporal - pgStore)),
    },
    rss: Object.fromEntries(GROUPS.map((g) => [g, Math.max(0, ...m.samples.map((s) => s.rss[g] ?? 0))])) as Record<
      Group,
      number
    >,
    bottleneck: GROUPS.reduce((a, g) => (cpuMsPerCompletion[g] > cpuMsPerCompletion[a] ? g : a)),
    errors: [...fleet.errors],
  };
}
