/**
 * `npm run bench [-- --profile default|pi5|smoke|scaling|scaling-smoke ...]`: idle-agent density and throughput of infinity-temporal on a
 * local Temporal dev server, side by side with the v0.1 operation pattern, the ceiling of the current one and the
 * blocking design, in one run. Writes bench/results/<profile>-<timestamp>.{json,md,svg}. See bench/README.md.
 *
 * `main` only sequences the phases (bench/phases/): all workers start, the waves run interleaved, then per design the
 * latency and parked phases, then the density phase in a fresh worker of ours. The scaling profiles run
 * `bench/scaling-run.ts` instead.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startDevServer } from '../src/devserver/server';
import { SqliteConversationStore } from '../src/store/sqlite';
import { COLORS, config } from './config';
import { enterMemoryBudget } from './lib/budget';
import { renderChart } from './lib/chart';
import type { Design } from './lib/fleet';
import { runMain } from './lib/main';
import { progressLine } from './lib/progress';
import { RssSampler, total } from './lib/proc';
import { type Bench, budgetExceeded } from './phases/context';
import { densityPhase } from './phases/density';
import { governedPhase } from './phases/governed';
import { latencyPhase } from './phases/latency';
import { parkedPhase } from './phases/parked';
import { prioritiesPhase } from './phases/priorities';
import { type DesignRun, startFleets, wavesPhase } from './phases/waves';
import { summary } from './report';
import { designResult, type Results, ratios } from './results';
import { scalingMain } from './scaling-run';
import { runScratch } from '../infra/scratch';
import { writeThreadBundle } from './lib/bundle';

export { summary } from './report';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cfg = config();
  if (cfg.scaling) return scalingMain({ ...cfg, scaling: cfg.scaling });
  const started = new Date();
  // Taken now: files may change while a long run goes on, and the result names what it started on.
  const measured = releaseMeasured();
  const budget = cfg.budgetBytes ? enterMemoryBudget(cfg.budgetBytes) : { mode: 'none' as const };
  // The servers' databases and the stores: gigabytes after a density phase, gone when the run ends.
  const scratch = runScratch('infinity-bench-');
  const work = scratch.dir;
  const dbFile = join(work, 'temporal.sqlite');
  const storeFile = join(work, 'conversations.sqlite');
  await new SqliteConversationStore(storeFile).close(); // creates the store's file and schema
  const server = await startDevServer({ ui: false, dbFilename: dbFile });
  const bundlePath = await writeThreadBundle(work);

  const b: Bench = {
    cfg,
    address: server.address,
    dbFile,
    storeFile,
    bundlePath,
    sampler: new RssSampler(() => ({ server: server.pid, worker: b.current?.pid, driver: process.pid })),
    progress: '',
    memorySeries: [],
  };
  b.sampler.start(1000);
  const stopProgress = progressLine(b);

  const baseline = b.sampler.sample();
  const runs = new Map<Design, DesignRun>();
  try {
    await startFleets(b, runs);
    await wavesPhase(b, runs);
    const designs: Results['designs'] = {};
    const throughput: { name: string; value: number; color: string }[] = [];
    for (const [design, run] of runs) {
      const latency = await latencyPhase(b, design, run.fleet);
      const parked = await parkedPhase(b, design, run.fleet);
      const result = designResult(design, run.waves, {
        restRss: run.restRss,
        latency,
        parked,
        errors: run.fleet.errors,
      });
      designs[design] = result;
      throughput.push({ name: design, value: result.completionsPerSecond, color: COLORS[design] });
      if (design === 'ours')
        b.memorySeries.push({ name: 'ours: idle agents after T turns', color: '#17becf', points: run.idlePoints });
      await run.fleet.stop();
      b.current = undefined;
      if (budgetExceeded(b)) throw new Error('memory budget exceeded');
    }
    const priorities = await prioritiesPhase(b);
    const density = await densityPhase(b);
    // Last: it starts dev servers of its own, one per run, and the memory figures above are taken.
    b.sampler.phase = 'governed';
    const governed = cfg.governed && (await governedPhase(cfg.governed, (s) => (b.progress = s)));

    const peak = Math.max(...b.sampler.samples.map(total));
    const results: Results = {
      profile: cfg.profile,
      ...measured,
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        memoryBytes: totalmem(),
        node: process.version,
        platform: process.platform,
      },
      config: cfg,
      budget: {
        ...budget,
        peakTotalRssBytes: peak,
        withinBudget: cfg.budgetBytes === undefined || peak <= cfg.budgetBytes,
      },
      baselineRss: baseline.rss,
      serverRestRss: baseline.rss.server ?? 0,
      designs,
      density,
      ...(priorities && { priorities }),
      ...(governed && { governed }),
      ratios: ratios(designs),
      rssTimeline: b.sampler.samples,
    };
    mkdirSync(cfg.outDir, { recursive: true });
    const base = join(cfg.outDir, `${cfg.profile}-${started.toISOString().replace(/[:.]/g, '-')}`);
    writeFileSync(`${base}.json`, JSON.stringify(results, null, 2));
    writeFileSync(
      `${base}.svg`,
      renderChart({
        title: `infinity-temporal benchmark (${cfg.profile}, ${cpus().length} cores)`,
        memory: b.memorySeries,
        throughput,
      }),
    );
    const md = summary(results);
    writeFileSync(`${base}.md`, md);
    stopProgress();
    console.log(md);
    console.log(`results: ${base}.{json,md,svg}`);
  } finally {
    stopProgress();
    b.sampler.stop();
    await b.current?.stop().catch(() => undefined);
    for (const run of runs.values()) await run.fleet.stop().catch(() => undefined);
    await server.stop();
    scratch.remove();
  }
}

if (require.main === module) runMain(main);

/** What a result measured: the release in package.json and the commit, so a release's run is named by both. */
function releaseMeasured(): { version: string; commit: string } {
  const root = join(__dirname, '..');
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  const commit = git('rev-parse', 'HEAD') || 'unknown';
  // Only tracked files count: results and caches the run itself writes are untracked.
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  return { version, commit: dirty ? `${commit}-dirty` : commit };
}
