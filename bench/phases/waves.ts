/**
 * The waves: every design's worker starts first, then the designs take turns wave by wave. The dev server's database
 * grows with every wave and it costs more CPU per operation as it does, so running one design's waves after another's
 * would tilt the comparison towards whichever ran first.
 */
import { PARK_STEPS } from '../config';
import type { Design, Fleet } from '../lib/fleet';
import { historyCost } from '../lib/history';
import { total } from '../lib/proc';
import { MiB, percentile } from '../lib/stats';
import type { WaveResult } from '../results';
import { type Bench, settledSample, startFleet } from './context';

export interface DesignRun {
  fleet: Fleet;
  /** The worker's RSS right after it started and collected its garbage, before any agent. */
  restRss: number;
  waves: WaveResult[];
  /** Total RSS against the agents left idle by the waves (ours only: the baselines' agents end with their workflow). */
  idlePoints: { x: number; y: number }[];
  idle: number;
}

/** Starts every design's worker into `runs` (which the caller stops, also when this throws), each measured at rest. */
export async function startFleets(b: Bench, runs: Map<Design, DesignRun>): Promise<void> {
  const { cfg } = b;
  for (const design of cfg.designs) {
    b.sampler.phase = `${design} start`;
    // The blocking design holds an activity slot per waiting agent.
    const fleet = await startFleet(
      b,
      design,
      Math.max(200, PARK_STEPS * cfg.parked + 50, cfg.agentsPerWave + 50),
      undefined,
      design === 'ours' ? cfg.oursCpuTarget : undefined,
    );
    const run: DesignRun = { fleet, restRss: 0, waves: [], idlePoints: [], idle: 0 };
    runs.set(design, run);
    const s = await settledSample(b, fleet, 1000);
    run.restRss = s.rss.worker ?? 0;
    run.idlePoints.push({ x: 0, y: total(s) / MiB });
  }
}

/** Runs `cfg.waves` waves of every design, interleaved; each wave's result goes into its design's run. */
export async function wavesPhase(b: Bench, runs: Map<Design, DesignRun>): Promise<void> {
  const { cfg } = b;
  for (let w = 0; w < cfg.waves; w++) {
    for (const [design, run] of runs) {
      const { fleet } = run;
      b.current = fleet;
      b.sampler.phase = `${design} waves`;
      const ids = Array.from({ length: cfg.agentsPerWave }, (_, i) => `${design}-w${w}-${i}-${Date.now()}`);
      fleet.resetCounters();
      const t0 = performance.now();
      const c0 = b.sampler.sample();
      b.progress = `wave ${w + 1}/${cfg.waves}: ${cfg.agentsPerWave} agents × ${cfg.turns} turns`;
      await fleet.runTurns(ids, cfg.turns, cfg.toolDelayMs);
      const seconds = (performance.now() - t0) / 1000;
      const c1 = b.sampler.sample();
      const cpuMsPerCompletion = Object.fromEntries(
        Object.keys(c1.cpu).map((role) => [
          role,
          ((c1.cpu[role]! - (c0.cpu[role] ?? 0)) * 1000) / Math.max(1, fleet.completions),
        ]),
      );
      run.idle += design === 'ours' ? ids.length : 0;
      b.sampler.idleAgents = run.idle;
      const s = await settledSample(b, fleet, 1500);
      const cost = await historyCost(fleet.temporal, ids.slice(0, 3), cfg.turns);
      run.waves.push({
        wave: w + 1,
        agents: ids.length,
        seconds,
        completions: fleet.completions,
        completionsPerSecond: fleet.completions / seconds,
        cpuMsPerCompletion,
        latencyMs: {
          p50: percentile(fleet.latencies, 50),
          p99: percentile(fleet.latencies, 99),
          n: fleet.latencies.length,
        },
        ...cost,
        workflowTasksPerCompletion: cost.workflowTasksPerTurn / 2,
        idleAgentsAfter: run.idle,
        rssAfter: s.rss,
      });
      if (design === 'ours') run.idlePoints.push({ x: run.idle, y: total(s) / MiB });
    }
  }
}
