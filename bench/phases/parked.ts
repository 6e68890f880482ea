/**
 * Agents parked on a tool that answers much later (the 60 s tools of issue 5): what the worker holds meanwhile. Three
 * steps of N agents in the worker the waves used. The first N also fill the workflow cache and push the heap's
 * high-water mark (neither V8 nor malloc hands pages back at once), so "per waiting agent" is the slope of worker RSS
 * over the steps, and "at N agents" is the first step's growth.
 */
import { COLORS, PARK_STEPS } from '../config';
import type { Design, Fleet } from '../lib/fleet';
import { total } from '../lib/proc';
import { linearFit, MiB } from '../lib/stats';
import type { ParkedResult } from '../results';
import { type Bench, settledSample } from './context';

/** Designs whose workers hold something while an agent waits: the empty-bodied baselines are not measured. */
const PARKED_DESIGNS: readonly Design[] = ['ours', 'blocking'];

export async function parkedPhase(b: Bench, design: Design, fleet: Fleet): Promise<ParkedResult | undefined> {
  const { cfg } = b;
  if (!PARKED_DESIGNS.includes(design) || cfg.parked <= 0) return undefined;
  b.sampler.phase = `${design} parked`;
  const samples = [await settledSample(b, fleet, 1000)];
  const all: string[] = [];
  for (let step = 1; step <= PARK_STEPS; step++) {
    const ids = Array.from({ length: cfg.parked }, (_, i) => `${design}-park${step}-${i}-${Date.now()}`);
    await fleet.park(ids, 200, (n) => (b.progress = `parking ${all.length + n}/${PARK_STEPS * cfg.parked}`));
    all.push(...ids);
    samples.push(await settledSample(b, fleet, 1500));
  }
  const points = samples.map((s, i) => ({ agents: i * cfg.parked, worker: s.rss.worker ?? 0, total: total(s) }));
  b.memorySeries.push({
    name: `${design}: agents waiting on tools`,
    color: COLORS[design],
    points: points.map((p) => ({ x: p.agents, y: p.total / MiB })),
  });
  b.progress = `releasing ${all.length}`;
  await fleet.release(all);
  return {
    agents: cfg.parked,
    points,
    workerDeltaBytes: points[1]!.worker - points[0]!.worker,
    workerBytesPerWaitingAgent: linearFit(points.slice(1).map((p) => ({ x: p.agents, y: p.worker }))).slope,
  };
}
