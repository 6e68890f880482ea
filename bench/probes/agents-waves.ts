/**
 * `npx tsx bench/probes/agents-waves.ts [threads=200] [turns=5] [pairs=6]` (options `--tool-delay-ms 100`,
 * `--max-cached 500`, `--out dir`): what hosting two agents costs a worker (issue 40 §6: "waves with threads of two
 * agents cost no more than 1.02× the one-agent waves in the same run").
 *
 * One `ours` worker process hosts the benchmark's two agents (`bench/lib/bench-agents.ts`: `alpha` and `beta`, each
 * with its own instructions and tool set, both on the benchmark's `SimulatedModel`), on a fresh dev server. Waves as
 * the benchmark's (`bench/phases/waves.ts`): `threads` new threads, each running `turns` turns (user text, completion
 * that calls `bench_tool`, its result after the tool delay, completion that ends the turn), all at once (saturated).
 * Two arms:
 *
 * - `one`: every thread names `alpha`;
 * - `two`: threads alternate `alpha`, `beta` (even, odd index).
 *
 * Both name an agent at start, so the start, its search attributes and memo are the same: only the agents the slices
 * resolve differ. After one unmeasured warm-up wave of each arm, `pairs` pairs of measured waves run in the order
 * one, two, two, one, one, two, … (ABBA: a drift that is linear over a pair of pairs cancels out of the comparison).
 * Each wave reports completions/s, CPU ms per completion of the worker process, the dev server and this driver
 * (/proc), the rest of the machine's busy cores during the wave (`otherCores`: high means something else ran), tool
 * result → next completion latency p50/p99, history events per turn of two sampled threads, and, from the store, the
 * agent each of its slices recorded (so a `two` wave is checked to have run both). Per arm the median over its
 * waves; `ratio` is two ÷ one of those medians, `pairRatio` the median of the ratios within each adjacent pair.
 *
 * Prints a table and writes `<out>/agents-waves-<threads>x<turns>-<time>.json` (default out: bench/results).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { flag, positionals } from '../lib/args';
import { BENCH_AGENTS } from '../lib/bench-agents';
import { Fleet } from '../lib/fleet';
import { historyCost } from '../lib/history';
import { runMain } from '../lib/main';
import { machineBusySeconds, treeCpu } from '../lib/proc';
import { probeBase } from '../lib/probe-base';
import { median, percentile } from '../lib/stats';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const ARMS = ['one', 'two'] as const;
export type Arm = (typeof ARMS)[number];

/** The figures compared between the arms: each a number per wave, lower or higher better as `better` says. */
export const METRICS = {
  completionsPerSecond: 'higher',
  workerCpuMsPerCompletion: 'lower',
  serverCpuMsPerCompletion: 'lower',
  driverCpuMsPerCompletion: 'lower',
  latencyP50Ms: 'lower',
  latencyP99Ms: 'lower',
  eventsPerTurn: 'lower',
} as const;
export type Metric = keyof typeof METRICS;

export interface AgentsWave {
  arm: Arm;
  /** 0 for the arm's warm-up wave (not in the medians), then 1, 2, … in the order the waves ran. */
  wave: number;
  threads: number;
  turns: number;
  completions: number;
  seconds: number;
  figures: Record<Metric, number>;
  latencyN: number;
  /** Busy cores of the rest of the machine during the wave (all busy time less the three processes'). */
  otherCores: number;
  /** Slices committed by each agent (from the store), over the wave's threads. */
  slicesByAgent: Record<string, number>;
  dispatchedAgain: number;
  loadavg: number[];
}

export interface AgentsWavesResults {
  probe: 'agents-waves';
  startedAt: string;
  finishedAt: string;
  /** The commit measured (`-dirty` when tracked files differed from it). */
  commit: string;
  config: { threads: number; turns: number; pairs: number; toolDelayMs: number; maxCachedWorkflows: number };
  /** `uptime`'s load averages (1, 5, 15 min) at the start and the end. */
  loadStart: number[];
  loadEnd: number[];
  waves: AgentsWave[];
  /** Per arm, per metric: the median over its measured waves. */
  medians: Record<Arm, Record<Metric, number>>;
  /** two ÷ one of the medians, per metric. */
  ratio: Record<Metric, number>;
  /** Per metric, the median over adjacent (one, two) pairs of the ratio within the pair. */
  pairRatio: Record<Metric, number>;
  errors: string[];
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const [threadsArg, turnsArg, pairsArg] = positionals();
  const threads = Number(threadsArg ?? 200);
  const turns = Number(turnsArg ?? 5);
  const pairs = Number(pairsArg ?? 6);
  const toolDelayMs = Number(flag('--tool-delay-ms') ?? 100);
  const maxCachedWorkflows = Number(flag('--max-cached') ?? 500);
  const outDir = flag('--out') ?? join(__dirname, '..', 'results');
  const startedAt = new Date();
  const loadStart = loadavg();
  const commit = measuredCommit();

  const base = await probeBase('agents-waves');
  const agentOf = new Map<string, string>();
  const fleet = new Fleet({
    ...base.fleetOptions('ours'),
    maxCachedWorkflows,
    activitySlots: 200,
    agentOf: (id) => agentOf.get(id),
  });
  const store = new Database(base.storeFile, { readonly: true, fileMustExist: true });
  const slicesOf = store.prepare<[string], { agent: string | null; n: number }>(
    `SELECT json_extract(result, '$.agent.name') AS agent, count(*) AS n FROM slices
     WHERE thread_id IN (SELECT value FROM json_each(?)) GROUP BY agent`,
  );
  const cpu = () => ({
    worker: treeCpu(fleet.pid!),
    server: treeCpu(base.server.pid),
    driver: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    busy: machineBusySeconds(),
  });
  const waves: AgentsWave[] = [];
  let measured = 0;

  const runWave = async (arm: Arm, warmup: boolean): Promise<void> => {
    const wave = warmup ? 0 : ++measured;
    const ids = Array.from({ length: threads }, (_, i) => `${arm}-w${wave}-${i}-${Date.now()}`);
    ids.forEach((id, i) => agentOf.set(id, arm === 'one' ? BENCH_AGENTS[0] : BENCH_AGENTS[i % 2]!));
    // As the benchmark's waves: each starts from a collected heap and a quiet machine.
    await fleet.gc();
    await sleep(1500);
    fleet.resetCounters();
    const again0 = fleet.dispatchedAgain;
    process.stdout.write(`${warmup ? 'warm-up' : `wave ${wave}/${2 * pairs}`} ${arm}: ${threads} × ${turns} … `);
    const c0 = cpu();
    const t0 = performance.now();
    await fleet.runTurns(ids, turns, toolDelayMs);
    const seconds = (performance.now() - t0) / 1000;
    const c1 = cpu();
    const n = Math.max(1, fleet.completions);
    const per = (k: 'worker' | 'server' | 'driver') => ((c1[k] - c0[k]) * 1000) / n;
    const own = c1.worker - c0.worker + (c1.server - c0.server) + (c1.driver - c0.driver);
    // One thread of each agent the wave ran (ids 0 and 1 alternate in a `two` wave).
    const cost = await historyCost(fleet.temporal, ids.slice(0, 2), turns);
    const slicesByAgent = Object.fromEntries(
      slicesOf.all(JSON.stringify(ids)).map((r) => [r.agent ?? 'none', r.n] as const),
    );
    const w: AgentsWave = {
      arm,
      wave,
      threads,
      turns,
      completions: fleet.completions,
      seconds,
      figures: {
        completionsPerSecond: fleet.completions / seconds,
        workerCpuMsPerCompletion: per('worker'),
        serverCpuMsPerCompletion: per('server'),
        driverCpuMsPerCompletion: per('driver'),
        latencyP50Ms: percentile(fleet.latencies, 50),
        latencyP99Ms: percentile(fleet.latencies, 99),
        eventsPerTurn: cost.eventsPerTurn,
      },
      latencyN: fleet.latencies.length,
      otherCores: (c1.busy - c0.busy - own) / seconds,
      slicesByAgent,
      dispatchedAgain: fleet.dispatchedAgain - again0,
      loadavg: loadavg(),
    };
    waves.push(w);
    console.log(
      `${w.figures.completionsPerSecond.toFixed(1)}/s, worker ${w.figures.workerCpuMsPerCompletion.toFixed(2)} ms, ` +
        `server ${w.figures.serverCpuMsPerCompletion.toFixed(2)} ms, p50 ${w.figures.latencyP50Ms.toFixed(1)} ms, ` +
        `other ${w.otherCores.toFixed(2)} cores, slices ${JSON.stringify(slicesByAgent)}`,
    );
  };

  try {
    await fleet.start();
    await runWave('one', true);
    await runWave('two', true);
    for (let p = 0; p < pairs; p++) {
      const order: Arm[] = p % 2 === 0 ? ['one', 'two'] : ['two', 'one'];
      for (const arm of order) await runWave(arm, false);
    }
  } finally {
    await fleet.stop().catch(() => undefined);
    store.close();
    await base.server.stop();
  }

  const results = summarize(waves, {
    startedAt: startedAt.toISOString(),
    commit,
    config: { threads, turns, pairs, toolDelayMs, maxCachedWorkflows },
    loadStart,
    errors: fleet.errors,
  });
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `agents-waves-${threads}x${turns}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\n${table(results)}\nload ${fmtLoad(results.loadStart)} → ${fmtLoad(results.loadEnd)}`);
  if (results.errors.length > 0) console.log(`errors: ${results.errors.join('; ')}`);
  console.log(`results: ${file}`);
}

/** The medians and ratios of a run's waves. */
export function summarize(
  waves: AgentsWave[],
  run: Pick<AgentsWavesResults, 'startedAt' | 'commit' | 'config' | 'loadStart' | 'errors'>,
): AgentsWavesResults {
  const metrics = Object.keys(METRICS) as Metric[];
  const measured = waves.filter((w) => w.wave > 0);
  const of = (arm: Arm) => measured.filter((w) => w.arm === arm);
  const medians = Object.fromEntries(
    ARMS.map((arm) => [arm, Object.fromEntries(metrics.map((m) => [m, median(of(arm).map((w) => w.figures[m]))]))]),
  ) as AgentsWavesResults['medians'];
  const ratio = Object.fromEntries(metrics.map((m) => [m, medians.two[m] / medians.one[m]])) as Record<Metric, number>;
  // Waves 2k-1 and 2k ran one after the other: one of them each arm.
  const pairs: [AgentsWave, AgentsWave][] = [];
  for (let i = 0; i + 1 < measured.length; i += 2) {
    const [a, b] = [measured[i]!, measured[i + 1]!];
    if (a.arm !== b.arm) pairs.push(a.arm === 'one' ? [a, b] : [b, a]);
  }
  const pairRatio = Object.fromEntries(
    metrics.map((m) => [m, median(pairs.map(([one, two]) => two.figures[m] / one.figures[m]))]),
  ) as Record<Metric, number>;
  return {
    probe: 'agents-waves',
    ...run,
    finishedAt: new Date().toISOString(),
    loadEnd: loadavg(),
    waves,
    medians,
    ratio,
    pairRatio,
  };
}

/** HEAD, with `-dirty` when tracked files differ from it (other work in the tree while the probe ran). */
function measuredCommit(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: join(__dirname, '..', '..'), encoding: 'utf8' });
  try {
    return `${git('rev-parse', 'HEAD').trim()}${git('status', '--porcelain', '--untracked-files=no').trim() ? '-dirty' : ''}`;
  } catch {
    return 'unknown';
  }
}

const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
const LABELS: Record<Metric, string> = {
  completionsPerSecond: 'completions/s',
  workerCpuMsPerCompletion: 'worker CPU ms / completion',
  serverCpuMsPerCompletion: 'server CPU ms / completion',
  driverCpuMsPerCompletion: 'driver CPU ms / completion',
  latencyP50Ms: 'result → next completion p50 ms',
  latencyP99Ms: 'result → next completion p99 ms',
  eventsPerTurn: 'history events / turn',
};

/** The medians and ratios as a markdown table. */
export function table(r: AgentsWavesResults): string {
  const rows = (Object.keys(METRICS) as Metric[]).map((m) => {
    const f = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(1) : x.toFixed(2));
    return `| ${LABELS[m]} | ${f(r.medians.one[m])} | ${f(r.medians.two[m])} | **${r.ratio[m].toFixed(3)}** | ${r.pairRatio[m].toFixed(3)} |`;
  });
  const per = r.waves
    .filter((w) => w.wave > 0)
    .map(
      (w) =>
        `| ${w.wave} | ${w.arm} | ${w.figures.completionsPerSecond.toFixed(1)} | ${w.figures.workerCpuMsPerCompletion.toFixed(2)} | ${w.figures.serverCpuMsPerCompletion.toFixed(2)} | ${w.figures.latencyP50Ms.toFixed(1)} | ${w.figures.latencyP99Ms.toFixed(1)} | ${w.otherCores.toFixed(2)} | ${Object.entries(
          w.slicesByAgent,
        )
          .map(([a, n]) => `${a} ${n}`)
          .join(', ')} |`,
    );
  return [
    `| metric (median of ${r.config.pairs} waves per arm) | one agent | two agents | two / one | median of pair ratios |`,
    '|---|--:|--:|--:|--:|',
    ...rows,
    '',
    '| wave | arm | completions/s | worker ms | server ms | p50 ms | p99 ms | other cores | slices by agent |',
    '|--:|---|--:|--:|--:|--:|--:|--:|---|',
    ...per,
  ].join('\n');
}

if (require.main === module) runMain(main);
