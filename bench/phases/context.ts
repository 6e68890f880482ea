/** What every phase of a benchmark run shares: the configuration, the dev server, the RSS sampler and the chart. */
import type { Config } from '../config';
import type { Series } from '../lib/chart';
import { type Design, Fleet } from '../lib/fleet';
import type { RssSample, RssSampler } from '../lib/proc';
import { total } from '../lib/proc';

export interface Bench {
  cfg: Config;
  /** The dev server's address, its database and the conversation store. */
  address: string;
  dbFile: string;
  storeFile: string;
  bundlePath: string;
  sampler: RssSampler;
  /** The worker the sampler reads as `worker`: the one the running phase measures. */
  current?: Fleet;
  /** What the running phase is doing, for the progress line. */
  progress: string;
  /** Lines of the chart's memory panel, added by the phases. */
  memorySeries: Series[];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether total RSS has passed the run's memory budget at any sample so far. */
export const budgetExceeded = (b: Bench) =>
  b.cfg.budgetBytes !== undefined && b.sampler.samples.some((s) => total(s) > b.cfg.budgetBytes!);

/** Starts `design`'s worker process as the measured one. */
export async function startFleet(
  b: Bench,
  design: Design,
  activitySlots: number,
  workflowSlots?: number,
  cpuTarget?: number,
): Promise<Fleet> {
  const fleet = new Fleet({
    design,
    address: b.address,
    store: b.storeFile,
    bundlePath: b.bundlePath,
    maxCachedWorkflows: b.cfg.maxCachedWorkflows,
    activitySlots,
    threadOptions: b.cfg.noStatusAttribute ? { statusSearchAttribute: false } : undefined,
    ...(workflowSlots !== undefined && { workflowSlots }),
    ...(cpuTarget !== undefined && { cpuTarget }),
  });
  b.current = fleet;
  await fleet.start();
  return fleet;
}

/** Collects the measured worker's garbage, waits `ms` for RSS to settle, and samples every process. */
export async function settledSample(b: Bench, fleet: Fleet, ms: number): Promise<RssSample> {
  b.current = fleet;
  await fleet.gc();
  await sleep(ms);
  return b.sampler.sample();
}
