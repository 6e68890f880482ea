/** The benchmark's configuration: profiles and command-line options. See bench/README.md. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Design, DESIGNS } from './lib/fleet';
import { MiB } from './lib/stats';

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
  /** Run `ours` without the AgentStatus search attribute (two fewer history events and visibility writes per turn). */
  noStatusAttribute?: boolean;
  budgetBytes?: number;
  outDir: string;
}

/** Full turns a long-conversation agent runs before it parks on the next turn's tool call. */
export const LONG_TURNS = 9;
/** Steps of `parked` agents each in the parked phase. */
export const PARK_STEPS = 3;

export const COLORS: Record<Design, string> = { ours: '#1f77b4', v01: '#ff7f0e', ceiling: '#2ca02c', blocking: '#d62728' };

const designs = [...DESIGNS];
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
    budgetBytes: 8 * 1024 * MiB,
  },
};

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
      'latency-tool-delay-ms': { type: 'string' },
      out: { type: 'string' },
    },
  });
  const base = PROFILES[values.profile!];
  if (!base) throw new Error(`unknown profile ${values.profile}; one of ${Object.keys(PROFILES).join(', ')}`);
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const sizes = (v: string | undefined, d: number[]) => (v === undefined ? d : v.split(',').map(Number).filter((n) => n > 0));
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
    latencyToolDelayMs: num(values['latency-tool-delay-ms'], base.latencyToolDelayMs),
    outDir: values.out ?? join(__dirname, 'results'),
  };
}
