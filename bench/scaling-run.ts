/**
 * `npm run bench -- --profile scaling`: completions/s of `ours` with 1, 2 and 4 worker processes, on the dev server
 * and on the local multi-shard cluster, with the conversation store on SQLite and on PostgreSQL, in one run. Writes
 * bench/results/<profile>-<timestamp>.{json,md,svg}. See bench/README.md, "Scaling".
 *
 * One PostgreSQL serves the whole run: the clusters' persistence and every cell's store database. Every cell gets a
 * fresh server (a new SQLite file, or a cluster on new databases), started for it and stopped after it: a server costs
 * more CPU per operation as its database grows, and no idle server takes CPU from a cell.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { startLocalCluster } from '../infra/cluster/cluster';
import { type LocalPostgres, startLocalPostgres } from '../infra/postgres';
import { startDevServer } from '../src/devserver/server';
import type { Config, ScalingConfig, ScalingServer } from './config';
import { postmasterPid } from './lib/postgres-proc';
import { progressLine } from './lib/progress';
import { RssSampler } from './lib/proc';
import {
  runCell,
  type ScalingBench,
  type ScalingCell,
  type ScalingResults,
  type ScalingTarget,
} from './phases/scaling';
import { scalingChart, scalingSummary } from './scaling-report';
import { writeThreadBundle } from './lib/bundle';

/** A fresh Temporal server of one kind for cell `n`: the dev server on a new SQLite file, or a cluster on new databases. */
async function startTarget(
  b: ScalingBench,
  kind: ScalingServer,
  n: number,
): Promise<ScalingTarget & { stop(): Promise<void> }> {
  if (kind === 'dev') {
    const server = await startDevServer({ ui: false, dbFilename: join(b.work, `temporal-${n}.sqlite`) });
    return { kind, address: server.address, pids: [server.pid], databases: [], stop: () => server.stop() };
  }
  const database = `temporal_${n}`;
  const cluster = await startLocalCluster({
    postgres: b.postgres,
    shards: b.sc.shards,
    processes: 'one',
    database,
    dir: join(b.work, `cluster-${n}`),
  });
  const databases = [database, `${database}_visibility`];
  return { kind, address: cluster.address, pids: Object.values(cluster.pids), databases, stop: () => cluster.stop() };
}

/** Runs every cell, each on a server of its own: worker counts in order, each on every server with every store. */
async function runCells(b: ScalingBench): Promise<ScalingCell[]> {
  const cells: ScalingCell[] = [];
  for (const workers of b.sc.workers) {
    for (const kind of b.sc.servers) {
      for (const store of b.sc.stores) {
        b.sampler.phase = `${kind}/${store}/${workers}w start`;
        b.progress = `starting the ${kind === 'dev' ? 'dev server' : `cluster (${b.sc.shards} shards)`}`;
        const target = await startTarget(b, kind, cells.length + 1);
        b.target = target;
        try {
          cells.push(await runCell(b, target, store, workers));
        } finally {
          b.target = undefined;
          await target.stop();
        }
      }
    }
  }
  return cells;
}

/** Writes the JSON, the chart and the summary (also printed); returns their path without extension. */
function write(results: ScalingResults, started: Date): string {
  const cfg = results.config;
  mkdirSync(cfg.outDir, { recursive: true });
  const base = join(cfg.outDir, `${cfg.profile}-${started.toISOString().replace(/[:.]/g, '-')}`);
  writeFileSync(`${base}.json`, JSON.stringify(results, null, 2));
  writeFileSync(`${base}.svg`, scalingChart(results));
  const md = scalingSummary(results);
  writeFileSync(`${base}.md`, md);
  console.log(md);
  return base;
}

export async function scalingMain(cfg: Config & { scaling: ScalingConfig }): Promise<void> {
  const started = new Date();
  const work = mkdtempSync(join(tmpdir(), 'infinity-bench-scaling-'));
  let postgres: LocalPostgres | undefined;
  let stopProgress = () => {};
  try {
    postgres = await startLocalPostgres({ settings: { max_connections: 400 } });
    const postmaster = postmasterPid(postgres.dataDir);
    if (postmaster === undefined) throw new Error(`no postmaster.pid in ${postgres.dataDir}`);
    const b: ScalingBench = {
      cfg,
      sc: cfg.scaling,
      work,
      bundlePath: await writeThreadBundle(work),
      postgres,
      postmaster,
      sampler: new RssSampler(
        () => ({ server: b.target?.pids, workers: b.fleet?.pids, postgres: postmaster, driver: process.pid }),
        {
          reaped: ['postgres'],
          pss: ['postgres'],
        },
      ),
      progress: '',
    };
    b.sampler.start(1000);
    stopProgress = progressLine(b);
    const restRss = { postgres: b.sampler.sample().rss.postgres ?? 0 };
    const cells = await runCells(b);
    b.sampler.stop();
    stopProgress();
    const machine = {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryBytes: totalmem(),
      node: process.version,
      platform: process.platform,
    };
    const results: ScalingResults = {
      profile: cfg.profile,
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      machine,
      config: cfg,
      restRss,
      scaling: { cells },
      rssTimeline: b.sampler.samples,
    };
    console.log(`results: ${write(results, started)}.{json,md,svg}`);
  } finally {
    stopProgress();
    await postgres?.stop();
    if (postgres) rmSync(join(postgres.dataDir, '..'), { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
}
