/** The shape of a benchmark run's results (the JSON file), and the figures derived from the per-wave ones. */
import type { GovernedResult } from './phases/governed';
import type { Config } from './config';
import type { Design } from './lib/fleet';
import { medianByKey } from './lib/history';
import { median } from './lib/stats';

export interface WaveResult {
  wave: number;
  agents: number;
  seconds: number;
  completions: number;
  completionsPerSecond: number;
  /** CPU ms per completion over the wave, per process (server, worker, driver). */
  cpuMsPerCompletion: Record<string, number>;
  latencyMs: { p50: number; p99: number; n: number };
  eventsPerTurn: number;
  eventsByType: Record<string, number>;
  workflowTasksPerTurn: number;
  workflowTasksPerCompletion: number;
  idleAgentsAfter: number;
  rssAfter: Record<string, number>;
}

export interface LatencyResult {
  agents: number;
  toolDelayMs: number;
  p50: number;
  p99: number;
  n: number;
}

export interface ParkedResult {
  agents: number;
  points: { agents: number; worker: number; total: number }[];
  workerDeltaBytes: number;
  workerBytesPerWaitingAgent: number;
}

export interface DesignResult {
  waves: WaveResult[];
  /** Medians over the waves. */
  completionsPerSecond: number;
  cpuMsPerCompletion: { server: number; worker: number };
  eventsPerTurn: number;
  /** Per history event type, the median over the waves of its events per turn (`ours` and `v01`). */
  eventsByType?: Record<string, number>;
  /** The worker's RSS right after it started and collected its garbage, before any agent. */
  restRss: number;
  latency?: LatencyResult;
  parked?: ParkedResult;
  errors: string[];
}

export interface DensityPoint {
  agents: number;
  rss: Record<string, number>;
  total: number;
}

/** A series of idle agents: RSS at each size, least-squares slopes and disk growth per agent. */
export interface DensitySeries {
  points: DensityPoint[];
  slopeBytesPerAgent: number;
  workerSlopeBytesPerAgent: number;
  serverSlopeBytesPerAgent: number;
  diskBytesPerAgent: { temporal: number; store: number };
}

export interface DensityResult extends DensitySeries {
  parkSeconds: number;
  agentsParkedPerSecond: number;
  interceptBytes: number;
  r2: number;
  projectedAgentsIn8GiB: number;
  marginal: {
    slopeBytesPerAgent: number;
    interceptBytes: number;
    runtimeSlopeBytesPerAgent: number;
    projectedAgentsIn8GiB: number;
  };
  /** Agents parked on the tool call of a later turn, in the same worker after the one-turn points. */
  long?: DensitySeries & { historyTurns: number; parkSeconds: number; agentsParkedPerSecond: number };
  wake: { sample: number; exact: number; failures: string[]; seconds: number; latencyMs: { p50: number; p99: number } };
  /** Tool calls dispatched more than once over the whole phase (parking and waking; decision 74). */
  dispatchedAgain: number;
}

export interface Ratios {
  oursOverCeilingThroughput: number;
  oursOverV01Throughput: number;
  oursOverBlockingThroughput: number;
  parkedWorkerRssOursOverBlocking: number;
  parkedWorkerDeltaOursOverBlocking: number;
  parkedWorkerPerAgentOursOverBlocking: number;
}

export interface Results {
  profile: string;
  /** The release measured (`package.json`'s version), and the commit (`-dirty` with uncommitted changes). */
  version: string;
  commit: string;
  startedAt: string;
  finishedAt: string;
  machine: Record<string, unknown>;
  config: Config;
  budget: { mode: string; peakTotalRssBytes: number; withinBudget: boolean };
  /** RSS of every process before any worker started. */
  baselineRss: Record<string, number>;
  /** The dev server's RSS before any worker started (`baselineRss.server`). */
  serverRestRss: number;
  designs: Partial<Record<Design, DesignResult>>;
  density?: DensityResult;
  priorities?: PrioritiesResult;
  /** The governed phase (issue 27 §3): without and with provider limits. */
  governed?: GovernedResult;
  ratios: Ratios;
  rssTimeline: unknown[];
}

/** One run of the priorities phase: the user thread's tool result → next completion latency. */
export interface PriorityRun {
  p50: number;
  p99: number;
  /** Latencies measured (the user's turns). */
  n: number;
  /** Background events sent during the run. */
  events: number;
  /** From the user's first text to the last event delivered, and to the user's last turn ended. */
  floodMs: number;
  userMs: number;
  /** From the user's first text to the last background turn that took in the flood (0 without a flood). */
  drainedMs: number;
  /** Background completions during the run: fewer than events when slices took in several at once. */
  backgroundCompletions: number;
  errors: string[];
}

/**
 * The priorities phase (issue 16): the user thread alone, under the flood without priorities, with them, and with them
 * on a worker with a CPU target (decision 64).
 */
export interface PrioritiesResult {
  threads: number;
  events: number;
  turns: number;
  toolDelayMs: number;
  /** Workflow task slots of the worker (undefined: the runtime's default). */
  workflowSlots?: number;
  /** The `targets` run's `resourceTargets.cpu`. */
  cpuTarget: number;
  /** Events per second the flood was sent at; 0: as fast as 20 concurrent senders went. */
  floodRate: number;
  idleP50Ms: number;
  idleP99Ms: number;
  floodWithoutP50Ms: number;
  floodWithoutP99Ms: number;
  floodWithP50Ms: number;
  floodWithP99Ms: number;
  /** The goal: at most 3. */
  floodWithOverIdleP50: number;
  floodWithTargetsP50Ms: number;
  floodWithTargetsP99Ms: number;
  floodWithTargetsOverIdleP50: number;
  runs: { alone: PriorityRun; without: PriorityRun; with: PriorityRun; targets: PriorityRun };
}

/** Designs whose history events per turn are reported by type. */
const BY_TYPE: readonly Design[] = ['ours', 'v01'];

/** A design's result from its waves and the phases after them: the design-level figures are medians over waves. */
export function designResult(
  design: Design,
  waves: WaveResult[],
  rest: { restRss: number; latency?: LatencyResult; parked?: ParkedResult; errors: string[] },
): DesignResult {
  const cpu = (role: string) => median(waves.map((w) => w.cpuMsPerCompletion[role] ?? NaN));
  return {
    waves,
    completionsPerSecond: median(waves.map((w) => w.completionsPerSecond)),
    cpuMsPerCompletion: { server: cpu('server'), worker: cpu('worker') },
    eventsPerTurn: median(waves.map((w) => w.eventsPerTurn)),
    ...(BY_TYPE.includes(design) ? { eventsByType: medianByKey(waves.map((w) => w.eventsByType)) } : {}),
    ...rest,
  };
}

export function ratios(designs: Results['designs']): Ratios {
  /** ours / `other` of one figure; NaN when either design did not run or has no such figure. */
  const ratio = (other: Design, figure: (d: DesignResult) => number | undefined) =>
    (designs.ours ? (figure(designs.ours) ?? NaN) : NaN) / (designs[other] ? (figure(designs[other]) ?? NaN) : NaN);
  return {
    oursOverCeilingThroughput: ratio('ceiling', (d) => d.completionsPerSecond),
    oursOverV01Throughput: ratio('v01', (d) => d.completionsPerSecond),
    oursOverBlockingThroughput: ratio('blocking', (d) => d.completionsPerSecond),
    parkedWorkerRssOursOverBlocking: ratio('blocking', (d) => d.parked?.points[1]?.worker),
    parkedWorkerDeltaOursOverBlocking: ratio('blocking', (d) => d.parked?.workerDeltaBytes),
    parkedWorkerPerAgentOursOverBlocking: ratio('blocking', (d) => d.parked?.workerBytesPerWaitingAgent),
  };
}
