/**
 * `npm run bench [-- --profile default|pi5|smoke ...]`: idle-agent density and throughput of infinity-temporal on a
 * local Temporal dev server, side by side with the substrate ceiling and the blocking design, in one run.
 * Writes bench/results/<profile>-<timestamp>.{json,md,svg}. See bench/README.md.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode, DefaultLogger, Runtime } from '@temporalio/worker';
import { startDevServer } from '../src/devserver/server';
import { SqliteConversationStore } from '../src/store/sqlite';
import { threadWorkflowsPath } from '../src/worker/create-worker';
import { renderChart, type Series } from './lib/chart';
import { type Design, Fleet } from './lib/fleet';
import { enterMemoryBudget } from './lib/budget';
import { runMain } from './lib/main';
import { RssSampler, sqliteBytes, total } from './lib/proc';
import { fmtBytes, linearFit, median, MiB, percentile } from './lib/stats';

interface Config {
  profile: string;
  designs: Design[];
  waves: number;
  agentsPerWave: number;
  turns: number;
  toolDelayMs: number;
  parked: number;
  density: number[];
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

const PROFILES: Record<string, Omit<Config, 'profile' | 'outDir'>> = {
  smoke: { designs: ['ours', 'ceiling', 'blocking'], waves: 2, agentsPerWave: 3, turns: 2, toolDelayMs: 20, parked: 5, density: [10, 20], wakeSample: 5, maxCachedWorkflows: 50, latencyAgents: 3, latencyToolDelayMs: 50 },
  default: { designs: ['ours', 'ceiling', 'blocking'], waves: 4, agentsPerWave: 100, turns: 20, toolDelayMs: 100, parked: 1000, density: [5000, 10000], wakeSample: 1000, maxCachedWorkflows: 100, latencyAgents: 1000, latencyToolDelayMs: 60_000 },
  pi5: {
    designs: ['ours', 'ceiling', 'blocking'],
    waves: 4,
    agentsPerWave: 250,
    turns: 20,
    toolDelayMs: 100,
    parked: 1000,
    density: [10000, 50000, 100000],
    wakeSample: 1000,
    maxCachedWorkflows: 100,
    latencyAgents: 1000,
    latencyToolDelayMs: 60_000,
    budgetBytes: 8 * 1024 * MiB,
  },
};

function config(): Config {
  const { values } = parseArgs({
    options: {
      profile: { type: 'string', default: 'default' },
      designs: { type: 'string' },
      waves: { type: 'string' },
      agents: { type: 'string' },
      turns: { type: 'string' },
      'tool-delay-ms': { type: 'string' },
      parked: { type: 'string' },
      density: { type: 'string' },
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
  return {
    profile: values.profile!,
    ...base,
    designs: values.designs ? (values.designs.split(',') as Design[]) : base.designs,
    waves: num(values.waves, base.waves),
    agentsPerWave: num(values.agents, base.agentsPerWave),
    turns: num(values.turns, base.turns),
    toolDelayMs: num(values['tool-delay-ms'], base.toolDelayMs),
    parked: num(values.parked, base.parked),
    density: values.density !== undefined ? values.density.split(',').map(Number).filter((n) => n > 0) : base.density,
    wakeSample: num(values['wake-sample'], base.wakeSample),
    maxCachedWorkflows: num(values['max-cached'], base.maxCachedWorkflows),
    latencyAgents: num(values['latency-agents'], base.latencyAgents),
    noStatusAttribute: values['no-status-attribute'] ?? false,
    latencyToolDelayMs: num(values['latency-tool-delay-ms'], base.latencyToolDelayMs),
    outDir: values.out ?? join(__dirname, 'results'),
  };
}

/** Steps of `parked` agents each in the parked phase. */
const PARK_STEPS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const COLORS: Record<Design, string> = { ours: '#1f77b4', ceiling: '#2ca02c', blocking: '#d62728' };

/** History events and workflow tasks per turn, from a few agents' Temporal histories. */
async function historyCost(fleet: Fleet, ids: string[], turns: number) {
  const per: { events: number; workflowTasks: number }[] = [];
  for (const id of ids) {
    const h = await fleet.temporal.workflow.getHandle(id).fetchHistory();
    const events = h.events ?? [];
    const wft = events.filter((e) => String(e.eventType) === '6' || String(e.eventType) === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED').length;
    per.push({ events: events.length / turns, workflowTasks: wft / turns });
  }
  return { eventsPerTurn: median(per.map((p) => p.events)), workflowTasksPerTurn: median(per.map((p) => p.workflowTasks)) };
}

interface WaveResult {
  wave: number;
  agents: number;
  seconds: number;
  completions: number;
  completionsPerSecond: number;
  cpuMsPerCompletion: Record<string, number>;
  latencyMs: { p50: number; p99: number; n: number };
  eventsPerTurn: number;
  workflowTasksPerTurn: number;
  workflowTasksPerCompletion: number;
  idleAgentsAfter: number;
  rssAfter: Record<string, number>;
}

interface DesignResult {
  waves: WaveResult[];
  completionsPerSecond: number;
  latency?: { agents: number; toolDelayMs: number; p50: number; p99: number; n: number };
  parked?: {
    agents: number;
    points: { agents: number; worker: number; total: number }[];
    workerDeltaBytes: number;
    workerBytesPerWaitingAgent: number;
  };
  errors: string[];
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cfg = config();
  const started = new Date();
  const budget = cfg.budgetBytes ? enterMemoryBudget(cfg.budgetBytes) : { mode: 'none' as const };
  const work = mkdtempSync(join(tmpdir(), 'infinity-bench-'));
  const dbFile = join(work, 'temporal.sqlite');
  const storeFile = join(work, 'conversations.sqlite');
  new SqliteConversationStore(storeFile).close();
  const server = await startDevServer({ ui: false, dbFilename: dbFile });
  const bundlePath = join(work, 'bundle.js');
  writeFileSync(bundlePath, (await bundleWorkflowCode({ workflowsPath: threadWorkflowsPath(), logger: new DefaultLogger('ERROR') })).code);

  let current: Fleet | undefined;
  const sampler = new RssSampler(() => ({ server: server.pid, worker: current?.pid, driver: process.pid }));
  sampler.start(1000);
  let progress = '';
  const tty = process.stderr.isTTY;
  const show = setInterval(() => {
    const s = sampler.samples.at(-1);
    const line = `[${sampler.phase}] ${progress} · RSS ${s ? fmtBytes(total(s)) : '?'}`;
    if (tty) process.stderr.write(`\r${line.padEnd(110)}`);
    else console.error(line);
  }, tty ? 500 : 15_000);
  const budgetExceeded = () => cfg.budgetBytes !== undefined && sampler.samples.some((s) => total(s) > cfg.budgetBytes!);

  const baseline = sampler.sample();
  const designs: Partial<Record<Design, DesignResult>> = {};
  const memorySeries: Series[] = [];
  const throughputBars: { name: string; value: number; color: string }[] = [];
  const fleets = new Map<Design, Fleet>();

  try {
    // All designs' workers start first and take turns wave by wave: the dev server's database grows with every wave,
    // and it costs more CPU per operation as it does, so running one design's waves after another's would tilt the
    // comparison towards whichever ran first.
    const waveLog = new Map<Design, { waves: WaveResult[]; points: { x: number; y: number }[]; idle: number }>();
    for (const design of cfg.designs) {
      const fleet = new Fleet({
        design,
        address: server.address,
        storePath: storeFile,
        bundlePath,
        maxCachedWorkflows: cfg.maxCachedWorkflows,
        activitySlots: Math.max(200, PARK_STEPS * cfg.parked + 50, cfg.agentsPerWave + 50),
        threadOptions: cfg.noStatusAttribute ? { statusSearchAttribute: false } : undefined,
      });
      current = fleet;
      await fleet.start();
      await fleet.gc();
      await sleep(1000);
      fleets.set(design, fleet);
      waveLog.set(design, { waves: [], points: [{ x: 0, y: total(sampler.sample()) / MiB }], idle: 0 });
    }
    for (let w = 0; w < cfg.waves; w++) {
      for (const design of cfg.designs) {
        const fleet = fleets.get(design)!;
        const log = waveLog.get(design)!;
        current = fleet;
        sampler.phase = `${design} waves`;
        const ids = Array.from({ length: cfg.agentsPerWave }, (_, i) => `${design}-w${w}-${i}-${Date.now()}`);
        fleet.resetCounters();
        const t0 = performance.now();
        const c0 = sampler.sample();
        progress = `wave ${w + 1}/${cfg.waves}: ${cfg.agentsPerWave} agents × ${cfg.turns} turns`;
        await fleet.runTurns(ids, cfg.turns, cfg.toolDelayMs);
        const seconds = (performance.now() - t0) / 1000;
        const c1 = sampler.sample();
        const cpuMsPerCompletion = Object.fromEntries(
          Object.keys(c1.cpu).map((role) => [role, ((c1.cpu[role]! - (c0.cpu[role] ?? 0)) * 1000) / Math.max(1, fleet.completions)]),
        );
        log.idle += design === 'ours' ? ids.length : 0;
        sampler.idleAgents = log.idle;
        await fleet.gc();
        await sleep(1500);
        const s = sampler.sample();
        const cost = await historyCost(fleet, ids.slice(0, 3), cfg.turns);
        log.waves.push({
          wave: w + 1,
          agents: ids.length,
          seconds,
          completions: fleet.completions,
          completionsPerSecond: fleet.completions / seconds,
          cpuMsPerCompletion,
          latencyMs: { p50: percentile(fleet.latencies, 50), p99: percentile(fleet.latencies, 99), n: fleet.latencies.length },
          ...cost,
          workflowTasksPerCompletion: cost.workflowTasksPerTurn / 2,
          idleAgentsAfter: log.idle,
          rssAfter: s.rss,
        });
        if (design === 'ours') log.points.push({ x: log.idle, y: total(s) / MiB });
      }
    }
    for (const design of cfg.designs) {
      const fleet = fleets.get(design)!;
      const { waves, points } = waveLog.get(design)!;
      current = fleet;
      // Latency below saturation: many agents active at once, each waiting a long time on its tool.
      let latency;
      if (cfg.latencyAgents > 0) {
        sampler.phase = `${design} latency`;
        progress = `${cfg.latencyAgents} agents, tools answering after ${cfg.latencyToolDelayMs} ms`;
        fleet.resetCounters();
        const ids = Array.from({ length: cfg.latencyAgents }, (_, i) => `${design}-lat-${i}-${Date.now()}`);
        await fleet.runTurns(ids, 1, cfg.latencyToolDelayMs, 200, cfg.latencyToolDelayMs);
        latency = { agents: ids.length, toolDelayMs: cfg.latencyToolDelayMs, p50: percentile(fleet.latencies, 50), p99: percentile(fleet.latencies, 99), n: fleet.latencies.length };
      }
      const cps = median(waves.map((w) => w.completionsPerSecond));
      throughputBars.push({ name: design, value: cps, color: COLORS[design] });

      // Agents parked on a tool that answers much later (the 60 s tools of the issue): what the worker holds. Three
      // steps of N agents in the worker the waves used. The first N also fill the workflow cache and push the heap's
      // high-water mark (neither V8 nor malloc hands pages back at once), so "per waiting agent" is the slope of worker
      // RSS over the steps, and "at N agents" is the first step's growth.
      let parked;
      if (design !== 'ceiling' && cfg.parked > 0) {
        sampler.phase = `${design} parked`;
        await fleet.gc();
        await sleep(1000);
        const samples = [sampler.sample()];
        const all: string[] = [];
        for (let step = 1; step <= PARK_STEPS; step++) {
          const ids = Array.from({ length: cfg.parked }, (_, i) => `${design}-park${step}-${i}-${Date.now()}`);
          await fleet.park(ids, 200, (n) => (progress = `parking ${all.length + n}/${PARK_STEPS * cfg.parked}`));
          all.push(...ids);
          await fleet.gc();
          await sleep(1500);
          samples.push(sampler.sample());
        }
        const points = samples.map((s, i) => ({ agents: i * cfg.parked, worker: s.rss.worker ?? 0, total: total(s) }));
        memorySeries.push({ name: `${design}: agents waiting on tools`, color: COLORS[design], points: points.map((p) => ({ x: p.agents, y: p.total / MiB })) });
        progress = `releasing ${all.length}`;
        await fleet.release(all);
        parked = {
          agents: cfg.parked,
          points,
          workerDeltaBytes: points[1]!.worker - points[0]!.worker,
          workerBytesPerWaitingAgent: linearFit(points.slice(1).map((p) => ({ x: p.agents, y: p.worker }))).slope,
        };
      }
      if (design === 'ours') memorySeries.push({ name: 'ours: idle agents after T turns', color: '#17becf', points });
      designs[design] = { waves, completionsPerSecond: cps, latency, parked, errors: fleet.errors };
      await fleet.stop();
      current = undefined;
      if (budgetExceeded()) throw new Error('memory budget exceeded');
    }

    // Density: many agents parked mid-conversation, then a random sample woken and checked.
    let density;
    if (cfg.density.length > 0) {
      const fleet = new Fleet({ design: 'ours', address: server.address, storePath: storeFile, bundlePath, maxCachedWorkflows: cfg.maxCachedWorkflows, activitySlots: 200 });
      current = fleet;
      await fleet.start();
      sampler.phase = 'density';
      const all: string[] = [];
      const dbBefore = sqliteBytes(dbFile);
      const storeBefore = sqliteBytes(storeFile);
      await fleet.gc();
      await sleep(1000);
      const d0 = sampler.sample();
      const points = [{ agents: 0, rss: d0.rss, total: total(d0) }];
      const t0 = performance.now();
      for (const n of [...cfg.density].sort((a, b) => a - b)) {
        const ids = Array.from({ length: n - all.length }, (_, i) => `density-${all.length + i}`);
        await fleet.park(ids, 300, (k) => (progress = `parked ${all.length + k}/${n}`));
        all.push(...ids);
        sampler.idleAgents = all.length;
        await fleet.gc();
        await sleep(3000);
        const s = sampler.sample();
        points.push({ agents: all.length, rss: s.rss, total: total(s) });
        if (budgetExceeded()) throw new Error(`memory budget exceeded at ${all.length} agents`);
      }
      const parkSeconds = (performance.now() - t0) / 1000;
      const fit = linearFit(points.map((p) => ({ x: p.agents, y: p.total })));
      // Excluding the empty start: the worker's workflow cache and the server's history cache fill with the first
      // few thousand agents and then stay flat, so the marginal cost is the slope over the parked points only.
      const marginal = linearFit(points.slice(1).map((p) => ({ x: p.agents, y: p.total })));
      const runtimeMarginal = linearFit(points.slice(1).map((p) => ({ x: p.agents, y: (p.rss.server ?? 0) + (p.rss.worker ?? 0) })));
      const workerFit = linearFit(points.map((p) => ({ x: p.agents, y: p.rss.worker ?? 0 })));
      const serverFit = linearFit(points.map((p) => ({ x: p.agents, y: p.rss.server ?? 0 })));
      memorySeries.push({ name: 'ours: agents parked mid-conversation', color: '#9467bd', points: points.map((p) => ({ x: p.agents, y: p.total / MiB })) });

      // Wake a random sample and check each resumes with its exact history.
      const sample = [...all].sort(() => Math.random() - 0.5).slice(0, Math.min(cfg.wakeSample, all.length));
      progress = `waking ${sample.length}`;
      fleet.resetCounters();
      const w0 = performance.now();
      await fleet.release(sample, 100);
      const wakeSeconds = (performance.now() - w0) / 1000;
      const store = new SqliteConversationStore(storeFile, { readonly: true });
      let exact = 0;
      const failures: string[] = [];
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
      await store.close();
      density = {
        points,
        parkSeconds,
        agentsParkedPerSecond: all.length / parkSeconds,
        slopeBytesPerAgent: fit.slope,
        interceptBytes: fit.intercept,
        r2: fit.r2,
        workerSlopeBytesPerAgent: workerFit.slope,
        serverSlopeBytesPerAgent: serverFit.slope,
        projectedAgentsIn8GiB: Math.floor((8 * 1024 * MiB - fit.intercept) / fit.slope),
        marginal: {
          slopeBytesPerAgent: marginal.slope,
          interceptBytes: marginal.intercept,
          runtimeSlopeBytesPerAgent: runtimeMarginal.slope,
          projectedAgentsIn8GiB: Math.floor((8 * 1024 * MiB - marginal.intercept) / marginal.slope),
        },
        diskBytesPerAgent: { temporal: (sqliteBytes(dbFile) - dbBefore) / all.length, store: (sqliteBytes(storeFile) - storeBefore) / all.length },
        wake: { sample: sample.length, exact, failures, seconds: wakeSeconds, latencyMs: { p50: percentile(fleet.latencies, 50), p99: percentile(fleet.latencies, 99) } },
      };
      await fleet.stop();
      current = undefined;
    }

    /** ours / `other` of one figure; NaN when either design did not run or has no such figure. */
    const ratio = (other: Design, figure: (d: DesignResult) => number | undefined) =>
      (designs.ours ? (figure(designs.ours) ?? NaN) : NaN) / (designs[other] ? (figure(designs[other]) ?? NaN) : NaN);
    const peak = Math.max(...sampler.samples.map(total));
    const results = {
      profile: cfg.profile,
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version, platform: process.platform },
      config: cfg,
      budget: { ...budget, peakTotalRssBytes: peak, withinBudget: cfg.budgetBytes === undefined || peak <= cfg.budgetBytes },
      baselineRss: baseline.rss,
      designs,
      density,
      ratios: {
        oursOverCeilingThroughput: ratio('ceiling', (d) => d.completionsPerSecond),
        oursOverBlockingThroughput: ratio('blocking', (d) => d.completionsPerSecond),
        parkedWorkerRssOursOverBlocking: ratio('blocking', (d) => d.parked?.points[1]?.worker),
        parkedWorkerDeltaOursOverBlocking: ratio('blocking', (d) => d.parked?.workerDeltaBytes),
        parkedWorkerPerAgentOursOverBlocking: ratio('blocking', (d) => d.parked?.workerBytesPerWaitingAgent),
      },
      rssTimeline: sampler.samples,
    };
    const dir = cfg.outDir;
    mkdirSync(dir, { recursive: true });
    const base = join(dir, `${cfg.profile}-${started.toISOString().replace(/[:.]/g, '-')}`);
    writeFileSync(`${base}.json`, JSON.stringify(results, null, 2));
    writeFileSync(`${base}.svg`, renderChart({ title: `infinity-temporal benchmark (${cfg.profile}, ${cpus().length} cores)`, memory: memorySeries, throughput: throughputBars }));
    const md = summary(results);
    writeFileSync(`${base}.md`, md);
    if (tty) process.stderr.write('\n');
    console.log(md);
    console.log(`results: ${base}.{json,md,svg}`);
  } finally {
    clearInterval(show);
    sampler.stop();
    await current?.stop().catch(() => undefined);
    for (const fleet of fleets.values()) await fleet.stop().catch(() => undefined);
    await server.stop();
  }
}

type Results = {
  profile: string;
  config: Config;
  designs: Partial<Record<Design, DesignResult>>;
  density?: {
    slopeBytesPerAgent: number;
    interceptBytes: number;
    r2: number;
    projectedAgentsIn8GiB: number;
    points: { agents: number; total: number }[];
    workerSlopeBytesPerAgent: number;
    serverSlopeBytesPerAgent: number;
    diskBytesPerAgent: { temporal: number; store: number };
    marginal: { slopeBytesPerAgent: number; interceptBytes: number; runtimeSlopeBytesPerAgent: number; projectedAgentsIn8GiB: number };
    agentsParkedPerSecond: number;
    wake: { sample: number; exact: number; latencyMs: { p50: number; p99: number } };
  };
  ratios: { oursOverCeilingThroughput: number; oursOverBlockingThroughput: number; parkedWorkerRssOursOverBlocking: number; parkedWorkerDeltaOursOverBlocking: number; parkedWorkerPerAgentOursOverBlocking: number };
  budget: { peakTotalRssBytes: number; withinBudget: boolean; mode: string };
};

export function summary(r: Results): string {
  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const lines = [
    `## Benchmark: ${r.profile}`,
    '',
    `${r.config.waves} waves × ${r.config.agentsPerWave} agents × ${r.config.turns} turns, tool delay ${r.config.toolDelayMs} ms; ` +
      `${r.config.parked} parked agents per design; density ${r.config.density.join(', ')}. Medians over waves.` +
      (r.config.noStatusAttribute ? ' Ours ran without the AgentStatus search attribute.' : ''),
    '',
    '| design | completions/s | result→next completion p50 / p99, saturated (ms) | same, at the latency load (ms) | history events / turn | workflow tasks / completion | CPU ms / completion (server, worker) | worker RSS with N agents waiting on tools (Δ from 0; slope over N…3N) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const [name, d] of Object.entries(r.designs)) {
    const w = d.waves;
    const cpu = (role: string) => f(median(w.map((x) => x.cpuMsPerCompletion[role] ?? NaN)), 2);
    lines.push(
      `| ${name} | ${f(d.completionsPerSecond)} | ${f(median(w.map((x) => x.latencyMs.p50)))} / ${f(median(w.map((x) => x.latencyMs.p99)))} | ` +
        `${d.latency ? `${f(d.latency.p50)} / ${f(d.latency.p99)} (${d.latency.agents} agents, ${d.latency.toolDelayMs / 1000} s tools)` : '—'} | ` +
        `${f(median(w.map((x) => x.eventsPerTurn)))} | ${f(median(w.map((x) => x.workflowTasksPerCompletion)), 2)} | ${cpu('server')}, ${cpu('worker')} | ` +
        `${d.parked ? `${fmtBytes(d.parked.points[1]!.worker)} (Δ ${fmtBytes(d.parked.workerDeltaBytes)}; ${f(d.parked.workerBytesPerWaitingAgent / 1024, 2)} KiB per waiting agent)` : '—'} |`,
    );
  }
  lines.push('', `Ratios: ours / ceiling throughput **${f(r.ratios.oursOverCeilingThroughput, 2)}**; ours / blocking throughput ${f(r.ratios.oursOverBlockingThroughput, 2)}; ` +
    `worker memory per waiting agent, ours / blocking **${r.ratios.parkedWorkerPerAgentOursOverBlocking < 0 ? '0 (ours did not grow)' : f(r.ratios.parkedWorkerPerAgentOursOverBlocking, 3)}**; ` +
    `worker RSS growth from 0 to ${r.config.parked} waiting agents, ours / blocking ${f(r.ratios.parkedWorkerDeltaOursOverBlocking, 3)}; ` +
    `whole worker RSS with ${r.config.parked} waiting, ours / blocking ${f(r.ratios.parkedWorkerRssOursOverBlocking, 3)}.`);
  const d = r.density;
  if (d) {
    lines.push(
      '',
      '| idle agents (parked on a tool) | total RSS (server + worker + driver) |',
      '|---|---|',
      ...d.points.map((p) => `| ${p.agents} | ${fmtBytes(p.total)} |`),
      '',
      `Memory per idle agent (slope): **${f(d.slopeBytesPerAgent / 1024, 2)} KiB** (worker ${f(d.workerSlopeBytesPerAgent / 1024, 2)} KiB, server ${f(d.serverSlopeBytesPerAgent / 1024, 2)} KiB), ` +
        `intercept ${fmtBytes(d.interceptBytes)}, r² ${f(d.r2, 3)}. Projected agents in 8 GiB: **${d.projectedAgentsIn8GiB.toLocaleString('en-US')}**.`,
      `Marginal (fit over the parked points only): **${f(d.marginal.slopeBytesPerAgent / 1024, 2)} KiB** per idle agent across all processes, ` +
        `${f(d.marginal.runtimeSlopeBytesPerAgent / 1024, 2)} KiB in the runtime's processes (server + worker, without the benchmark driver); ` +
        `projected agents in 8 GiB: **${d.marginal.projectedAgentsIn8GiB.toLocaleString('en-US')}**.`,
      `Disk per agent: Temporal DB ${fmtBytes(d.diskBytesPerAgent.temporal)}, conversation store ${fmtBytes(d.diskBytesPerAgent.store)}. Parking rate ${f(d.agentsParkedPerSecond)} agents/s.`,
      `Woken sample: ${d.wake.exact}/${d.wake.sample} resumed with their exact history (result→completion p50 ${f(d.wake.latencyMs.p50)} ms, p99 ${f(d.wake.latencyMs.p99)} ms).`,
    );
  }
  lines.push('', `Peak total RSS ${fmtBytes(r.budget.peakTotalRssBytes)}; memory budget: ${r.budget.mode}${r.budget.withinBudget ? '' : ' — EXCEEDED'}.`);
  return lines.join('\n');
}

if (require.main === module) runMain(main);
