/**
 * Density: many `ours` agents parked mid-conversation in one worker, RSS of every process at each size. First agents
 * parked after a one-turn conversation (`cfg.density`), then, in the same worker, agents parked on the tool call of
 * their 10th turn (`cfg.longDensity`: a 10-turn history each), fitted over their own points. Last, a random sample of
 * the one-turn agents is woken and each one's committed history is checked item by item.
 */
import { LONG_TURNS } from '../config';
import type { Fleet } from '../lib/fleet';
import { type RssSample, sqliteBytes, total } from '../lib/proc';
import { linearFit, MiB, percentile } from '../lib/stats';
import { SqliteConversationStore } from '../../src/store/sqlite';
import type { DensityPoint, DensityResult, DensitySeries } from '../results';
import { type Bench, budgetExceeded, settledSample, startFleet } from './context';

const EIGHT_GIB = 8 * 1024 * MiB;

export async function densityPhase(b: Bench): Promise<DensityResult | undefined> {
  const { cfg } = b;
  if (cfg.density.length === 0) return undefined;
  b.sampler.phase = 'density';
  const fleet = await startFleet(b, 'ours', 200);
  try {
    const short = await parkSeries(b, fleet, cfg.density, 'density', 0, 300);
    const { points } = short.result;
    const fit = linearFit(points.map((p) => ({ x: p.agents, y: p.total })));
    // Excluding the empty start: the worker's workflow cache and the server's history cache fill with the first
    // few thousand agents and then stay flat, so the marginal cost is the slope over the parked points only.
    const marginal = linearFit(points.slice(1).map((p) => ({ x: p.agents, y: p.total })));
    const runtimeMarginal = linearFit(
      points.slice(1).map((p) => ({ x: p.agents, y: (p.rss.server ?? 0) + (p.rss.worker ?? 0) })),
    );
    b.memorySeries.push({
      name: 'ours: agents parked mid-conversation',
      color: '#9467bd',
      points: points.map((p) => ({ x: p.agents, y: p.total / MiB })),
    });

    let long: DensityResult['long'];
    if (cfg.longDensity.length > 0) {
      b.sampler.phase = 'density long';
      // Agents busy with their turns are bounded by the workflow cache, so that they do not evict each other.
      const series = await parkSeries(
        b,
        fleet,
        cfg.longDensity,
        'density-long',
        LONG_TURNS,
        Math.min(300, cfg.maxCachedWorkflows),
        short.ids.length,
      );
      long = {
        historyTurns: LONG_TURNS + 1,
        ...series.result,
        parkSeconds: series.seconds,
        agentsParkedPerSecond: series.ids.length / series.seconds,
      };
      b.memorySeries.push({
        name: `ours: parked on turn ${LONG_TURNS + 1} (x: agents of that series)`,
        color: '#8c564b',
        points: series.result.points.map((p) => ({ x: p.agents, y: p.total / MiB })),
      });
    }

    b.sampler.phase = 'density wake';
    const wake = await wakeAndCheck(b, fleet, short.ids);
    return {
      ...short.result,
      parkSeconds: short.seconds,
      agentsParkedPerSecond: short.ids.length / short.seconds,
      interceptBytes: fit.intercept,
      r2: fit.r2,
      projectedAgentsIn8GiB: Math.floor((EIGHT_GIB - fit.intercept) / fit.slope),
      marginal: {
        slopeBytesPerAgent: marginal.slope,
        interceptBytes: marginal.intercept,
        runtimeSlopeBytesPerAgent: runtimeMarginal.slope,
        projectedAgentsIn8GiB: Math.floor((EIGHT_GIB - marginal.intercept) / marginal.slope),
      },
      long,
      wake,
      dispatchedAgain: fleet.dispatchedAgain,
    };
  } finally {
    await fleet.stop();
    b.current = undefined;
  }
}

/**
 * Parks agents after `turns` full turns, up to each of `sizes` agents in all, sampling RSS after each size; the first
 * point is the settled RSS right before the series. Disk per agent is the growth of the Temporal database and the
 * conversation store over the series.
 */
async function parkSeries(
  b: Bench,
  fleet: Fleet,
  sizes: number[],
  prefix: string,
  turns: number,
  concurrency: number,
  idleBefore = 0,
) {
  const dbBefore = sqliteBytes(b.dbFile);
  const storeBefore = sqliteBytes(b.storeFile);
  const point = (s: RssSample, agents: number): DensityPoint => ({ agents, rss: s.rss, total: total(s) });
  const points = [point(await settledSample(b, fleet, 1000), 0)];
  const ids: string[] = [];
  const t0 = performance.now();
  for (const n of [...sizes].sort((x, y) => x - y)) {
    const batch = Array.from({ length: n - ids.length }, (_, i) => `${prefix}-${ids.length + i}`);
    const what = turns > 0 ? `parked after ${turns} turns` : 'parked';
    await fleet.parkAfter(batch, turns, concurrency, (k) => (b.progress = `${what} ${ids.length + k}/${n}`));
    ids.push(...batch);
    b.sampler.idleAgents = idleBefore + ids.length;
    points.push(point(await settledSample(b, fleet, 3000), ids.length));
    if (budgetExceeded(b)) throw new Error(`memory budget exceeded at ${idleBefore + ids.length} agents`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const slope = (y: (p: DensityPoint) => number) => linearFit(points.map((p) => ({ x: p.agents, y: y(p) }))).slope;
  const result: DensitySeries = {
    points,
    slopeBytesPerAgent: slope((p) => p.total),
    workerSlopeBytesPerAgent: slope((p) => p.rss.worker ?? 0),
    serverSlopeBytesPerAgent: slope((p) => p.rss.server ?? 0),
    diskBytesPerAgent: {
      temporal: (sqliteBytes(b.dbFile) - dbBefore) / ids.length,
      store: (sqliteBytes(b.storeFile) - storeBefore) / ids.length,
    },
  };
  return { ids, seconds, result };
}

/** Wakes a random sample of one-turn agents by delivering their tool results; checks each resumed with its exact history. */
async function wakeAndCheck(b: Bench, fleet: Fleet, ids: string[]): Promise<DensityResult['wake']> {
  const sample = [...ids].sort(() => Math.random() - 0.5).slice(0, Math.min(b.cfg.wakeSample, ids.length));
  b.progress = `waking ${sample.length}`;
  fleet.resetCounters();
  const w0 = performance.now();
  await fleet.release(sample, 100);
  const seconds = (performance.now() - w0) / 1000;
  const store = new SqliteConversationStore(b.storeFile, { readonly: true });
  let exact = 0;
  const failures: string[] = [];
  try {
    for (const id of sample) {
      const items = (await store.load(id)).map((s) => s.item);
      const kinds = items.map((i) => i.kind).join(',');
      const ok =
        kinds === 'user,assistant,tool_call,tool_result,assistant' &&
        items[0]!.kind === 'user' &&
        items[0]!.text === 'Turn 0: is build 1 green?' &&
        items[2]!.kind === 'tool_call' &&
        items[2]!.name === 'bench_tool' &&
        items[3]!.kind === 'tool_result' &&
        items[3]!.id === items[2]!.id &&
        items[4]!.kind === 'assistant' &&
        items[4]!.text.startsWith(`The tool answered: Build status for ${items[2]!.id}: green`);
      if (ok) exact++;
      else if (failures.length < 5) failures.push(`${id}: ${kinds}`);
    }
  } finally {
    await store.close();
  }
  return {
    sample: sample.length,
    exact,
    failures,
    seconds,
    latencyMs: { p50: percentile(fleet.latencies, 50), p99: percentile(fleet.latencies, 99) },
  };
}
