/** The benchmark's configuration: profiles and command-line options. See bench/README.md. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Design, DESIGNS } from './lib/fleet';
import { MiB } from './lib/stats';
import { DEFAULT_WORKFLOW_TASK_SLOTS } from '../src/worker/create-worker';
import type { GovernedConfig } from './phases/governed';

export interface Config {
  profile: string;
  designs: Design[];
  waves: number;
  agentsPerWave: number;
  turns: number;
  toolDelayMs: number;
  parked: number;
  /** Sizes of the density phase: `ours` agents parked after a one-turn conversation. */
  density: number[];
  /** Sizes of the density phase's second series: agents parked on the 10th turn's tool call (a 10-turn history). */
  longDensity: number[];
  wakeSample: number;
  maxCachedWorkflows: number;
  /** Agents active at once in the latency phase, each waiting `latencyToolDelayMs` on its tool. */
  latencyAgents: number;
  latencyToolDelayMs: number;
  /** The priorities phase: background threads subscribed, events flooded into them, turns of the user thread. */
  priorityThreads: number;
  priorityEvents: number;
  priorityTurns: number;
  /** Workflow task slots of the priorities phase's worker (default: the runtime's, `DEFAULT_WORKFLOW_TASK_SLOTS`). */
  priorityWorkflowSlots?: number;
  /** The CPU target of the priorities phase's fourth run (decision 64). */
  priorityCpuTarget: number;
  /** Events per second the flood is sent at; 0: as fast as 20 concurrent senders go. */
  priorityFloodRate: number;
  /** The governed phase (issue 27 §3): a fleet in weighted tenants against a rate-limited provider; absent: not run. */
  governed?: GovernedConfig;
  /** `ours`' worker in the waves and the phases after them with this CPU target (decision 64). @default none */
  oursCpuTarget?: number;
  /** Run `ours` without the AgentStatus search attribute (two fewer history events and visibility writes per turn). */
  noStatusAttribute?: boolean;
  budgetBytes?: number;
  /** The scaling profiles' matrix (then `agentsPerWave`, `turns`, `toolDelayMs` are each cell's load). */
  scaling?: ScalingConfig;
  outDir: string;
}

export const SCALING_SERVERS = ['dev', 'cluster'] as const;
export const SCALING_STORES = ['sqlite', 'postgres'] as const;
/** `dev`: `temporal server start-dev` (SQLite, one shard); `cluster`: the local multi-shard cluster on PostgreSQL. */
export type ScalingServer = (typeof SCALING_SERVERS)[number];
export type ScalingStore = (typeof SCALING_STORES)[number];

/** Every server × store × worker count is a cell: the same load on a fresh task queue with that many worker processes. */
export interface ScalingConfig {
  servers: ScalingServer[];
  stores: ScalingStore[];
  workers: number[];
  /** Agents that run one turn on a cell's fresh workers before its measurement starts (not measured). */
  warmupAgents: number;
  /** History shards of the cluster. */
  shards: number;
  /** A cell not done by then is recorded as incomplete, and the run goes on. */
  cellTimeoutMs: number;
}

/** Full turns a long-conversation agent runs before it parks on the next turn's tool call. */
export const LONG_TURNS = 9;
/** Steps of `parked` agents each in the parked phase. */
export const PARK_STEPS = 3;

export const COLORS: Record<Design, string> = {
  ours: '#1f77b4',
  v01: '#ff7f0e',
  ceiling: '#2ca02c',
  blocking: '#d62728',
  bare: '#7f7f7f',
};

const designs = [...DESIGNS];
/** The other phases' sizes in the scaling profiles, which run none of them. */
const NO_OTHER_PHASES = {
  designs: ['ours'] as Design[],
  waves: 1,
  parked: 0,
  density: [],
  longDensity: [],
  wakeSample: 0,
  latencyAgents: 0,
  latencyToolDelayMs: 0,
  priorityThreads: 0,
  priorityEvents: 0,
  priorityTurns: 0,
  priorityCpuTarget: 0.7,
  priorityFloodRate: 0,
};
export const PROFILES: Record<string, Omit<Config, 'profile' | 'outDir'>> = {
  smoke: {
    designs,
    waves: 2,
    agentsPerWave: 3,
    turns: 2,
    toolDelayMs: 20,
    parked: 5,
    density: [10, 20],
    longDensity: [4],
    wakeSample: 5,
    maxCachedWorkflows: 50,
    latencyAgents: 3,
    latencyToolDelayMs: 50,
    priorityThreads: 5,
    priorityEvents: 50,
    priorityTurns: 3,
    priorityCpuTarget: 0.7,
    priorityFloodRate: 0,
    governed: { threads: 16, tenants: 4, rpm: 600, concurrency: 4 },
  },
  default: {
    designs,
    waves: 4,
    agentsPerWave: 100,
    turns: 20,
    toolDelayMs: 100,
    parked: 1000,
    density: [5000, 10000],
    longDensity: [500, 1000],
    wakeSample: 1000,
    maxCachedWorkflows: 100,
    latencyAgents: 1000,
    latencyToolDelayMs: 60_000,
    priorityThreads: 200,
    priorityEvents: 10_000,
    priorityTurns: 20,
    priorityCpuTarget: 0.7,
    priorityFloodRate: 0,
    governed: { threads: 1000, tenants: 10, rpm: 3000, concurrency: 8 },
  },
  pi5: {
    designs,
    waves: 4,
    agentsPerWave: 250,
    turns: 20,
    toolDelayMs: 100,
    parked: 1000,
    density: [10000, 50000, 100000],
    longDensity: [1000, 5000],
    wakeSample: 1000,
    maxCachedWorkflows: 100,
    latencyAgents: 1000,
    latencyToolDelayMs: 60_000,
    priorityThreads: 200,
    priorityEvents: 10_000,
    priorityTurns: 20,
    priorityCpuTarget: 0.7,
    priorityFloodRate: 0,
    governed: { threads: 1000, tenants: 10, rpm: 3000, concurrency: 8 },
    budgetBytes: 8 * 1024 * MiB,
  },
  scaling: {
    ...NO_OTHER_PHASES,
    agentsPerWave: 100,
    turns: 15,
    toolDelayMs: 100,
    maxCachedWorkflows: 100,
    scaling: {
      servers: [...SCALING_SERVERS],
      stores: [...SCALING_STORES],
      workers: [1, 2, 4],
      warmupAgents: 20,
      shards: 4,
      cellTimeoutMs: 300_000,
    },
  },
  'scaling-smoke': {
    ...NO_OTHER_PHASES,
    agentsPerWave: 3,
    turns: 2,
    toolDelayMs: 20,
    maxCachedWorkflows: 50,
    scaling: {
      servers: [...SCALING_SERVERS],
      stores: [...SCALING_STORES],
      workers: [1, 2],
      warmupAgents: 2,
      shards: 4,
      cellTimeoutMs: 120_000,
    },
  },
};

/** A comma-separated list whose every item is one of `allowed`. */
function listOf<T extends string>(v: string | undefined, allowed: readonly T[], d: T[], what: string): T[] {
  if (v === undefined) return d;
  const items = v.split(',').filter(Boolean);
  const unknown = items.filter((i) => !allowed.includes(i as T));
  if (unknown.length > 0) throw new Error(`unknown ${what} ${unknown.join(', ')}; one of ${allowed.join(', ')}`);
  return items as T[];
}

/** The scaling matrix of a scaling profile, with the command line's `--servers`, `--stores`, `--workers`, ... over it. */
function scalingOf(
  base: ScalingConfig | undefined,
  values: Record<string, string | boolean | undefined>,
): ScalingConfig | undefined {
  if (!base) return undefined;
  const str = (k: string) => values[k] as string | undefined;
  const workers = str('workers')
    ?.split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
  return {
    servers: listOf(str('servers'), SCALING_SERVERS, base.servers, 'server'),
    stores: listOf(str('stores'), SCALING_STORES, base.stores, 'store'),
    workers: workers ?? base.workers,
    warmupAgents: str('warmup-agents') === undefined ? base.warmupAgents : Number(str('warmup-agents')),
    shards: str('shards') === undefined ? base.shards : Number(str('shards')),
    cellTimeoutMs: base.cellTimeoutMs,
  };
}

/** The configuration of this run: a profile, with the command line's options over it. */
export function config(args: string[] = process.argv.slice(2)): Config {
  const { values } = parseArgs({
    args,
    options: {
      profile: { type: 'string', default: 'default' },
      designs: { type: 'string' },
      waves: { type: 'string' },
      agents: { type: 'string' },
      turns: { type: 'string' },
      'tool-delay-ms': { type: 'string' },
      parked: { type: 'string' },
      density: { type: 'string' },
      'long-density': { type: 'string' },
      'wake-sample': { type: 'string' },
      'max-cached': { type: 'string' },
      'latency-agents': { type: 'string' },
      'no-status-attribute': { type: 'boolean', default: false },
      'cpu-target': { type: 'string' },
      'latency-tool-delay-ms': { type: 'string' },
      'priority-threads': { type: 'string' },
      'priority-events': { type: 'string' },
      'governed-threads': { type: 'string' },
      'priority-turns': { type: 'string' },
      'priority-workflow-slots': { type: 'string' },
      'priority-cpu-target': { type: 'string' },
      'priority-flood-rate': { type: 'string' },
      servers: { type: 'string' },
      stores: { type: 'string' },
      workers: { type: 'string' },
      'warmup-agents': { type: 'string' },
      shards: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const base = PROFILES[values.profile!];
  if (!base) throw new Error(`unknown profile ${values.profile}; one of ${Object.keys(PROFILES).join(', ')}`);
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const sizes = (v: string | undefined, d: number[]) =>
    v === undefined
      ? d
      : v
          .split(',')
          .map(Number)
          .filter((n) => n > 0);
  const chosen = values.designs ? values.designs.split(',') : base.designs;
  const unknown = chosen.filter((d) => !DESIGNS.includes(d as Design));
  if (unknown.length > 0) throw new Error(`unknown design ${unknown.join(', ')}; one of ${DESIGNS.join(', ')}`);
  return {
    profile: values.profile!,
    ...base,
    designs: chosen as Design[],
    waves: num(values.waves, base.waves),
    agentsPerWave: num(values.agents, base.agentsPerWave),
    turns: num(values.turns, base.turns),
    toolDelayMs: num(values['tool-delay-ms'], base.toolDelayMs),
    parked: num(values.parked, base.parked),
    density: sizes(values.density, base.density),
    longDensity: sizes(values['long-density'], base.longDensity),
    wakeSample: num(values['wake-sample'], base.wakeSample),
    maxCachedWorkflows: num(values['max-cached'], base.maxCachedWorkflows),
    latencyAgents: num(values['latency-agents'], base.latencyAgents),
    noStatusAttribute: values['no-status-attribute'] ?? false,
    ...(values['cpu-target'] !== undefined && { oursCpuTarget: Number(values['cpu-target']) }),
    latencyToolDelayMs: num(values['latency-tool-delay-ms'], base.latencyToolDelayMs),
    priorityThreads: num(values['priority-threads'], base.priorityThreads),
    priorityEvents: num(values['priority-events'], base.priorityEvents),
    priorityTurns: num(values['priority-turns'], base.priorityTurns),
    priorityWorkflowSlots: num(values['priority-workflow-slots'], DEFAULT_WORKFLOW_TASK_SLOTS),
    priorityCpuTarget: num(values['priority-cpu-target'], base.priorityCpuTarget),
    priorityFloodRate: num(values['priority-flood-rate'], base.priorityFloodRate),
    ...governedOf(base.governed, values['governed-threads']),
    scaling: scalingOf(base.scaling, values),
    outDir: values.out ?? join(__dirname, 'results'),
  };
}

/** The governed phase's sizes: `--governed-threads N` resizes it, 0 skips it. */
function governedOf(base: GovernedConfig | undefined, threads: string | undefined): { governed?: GovernedConfig } {
  if (!base || threads === undefined) return { governed: base };
  const n = Number(threads);
  return { governed: n > 0 ? { ...base, threads: n } : undefined };
}
