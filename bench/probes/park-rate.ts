/**
 * `npx tsx bench/probes/park-rate.ts [agents] [designs] [--rounds n] [--out name]`: how fast each design parks agents
 * (start a thread with its first user text, run the completion that calls a tool nobody answers), the CPU each process
 * spends per parked agent, on a fresh dev server per design, and the history events and visibility writes of one
 * parked agent.
 *
 * Designs: `ours` (the runtime, started with `baseRelease: '0.5'` as a fleet on one build is: no 0.2–0.5 patch marker,
 * decision 66), `ours-ask` (without it: every run asks `patched()`, as before 0.6), `v01`, `ceiling`, `bare` (a workflow
 * that parks on a signal: no activity, no marker, no search attribute, plain start) and `waterfall`: `bare`, then the
 * parts of ours' start added one at a time (signal-with-start, each search attribute, memo and static metadata,
 * priority, the first task's local slice, its status upsert, the patch marker), then `ours` and `ours-ask`.
 * `ours-eager`, and any waterfall row but `+sws` with `-eager` (`bare-eager`, `+status-upsert-eager`): the same,
 * started by a client in the worker's process on its connection with eager workflow start (decision 72), as
 * `startLocalSystem`'s client starts threads; the driver only asks for each start. `waterfall-eager`: every such row,
 * then `ours-eager`.
 * `--rounds n` runs the whole list n times in order (the machine is shared: a ratio within one round is the figure,
 * its median over rounds the summary). `--out name` writes bench/results/<name>-<time>.{json,md}. `--cluster` runs
 * each measurement on the local multi-shard cluster (`npm run cluster:install`) on new databases of one PostgreSQL
 * instead of a dev server; the server column then counts the cluster's processes and PostgreSQL's.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startLocalCluster } from '../../infra/cluster/cluster';
import { type LocalPostgres, startLocalPostgres } from '../../infra/postgres';
import { runScratch } from '../../infra/scratch';
import { startDevServer } from '../../src/devserver/server';
import { postmasterPid } from '../lib/postgres-proc';
import { SqliteConversationStore } from '../../src/store/sqlite';
import type { ThreadOptions } from '../../src/workflows/contract';
import { type BareStart, type Design, Fleet } from '../lib/fleet';
import { eventTypeName as typeName } from '../lib/history';
import { flag, positionals } from '../lib/args';
import { runMain } from '../lib/main';
import { cpuSeconds, treeCpu } from '../lib/proc';
import { writeThreadBundle } from '../lib/bundle';
import { median } from '../lib/stats';

interface Variant {
  label: string;
  design: Design;
  threadOptions?: ThreadOptions;
  bare?: BareStart;
  /** Who starts the agents (the fleet's `startIn`). @default the driver */
  startIn?: 'worker';
  /** What this row adds to the one before it (waterfall) or what it is. */
  note: string;
}

const ours: Variant = {
  label: 'ours',
  design: 'ours',
  threadOptions: { baseRelease: '0.5' },
  note: "the runtime, baseRelease '0.5'",
};
const oursAsk: Variant = { label: 'ours-ask', design: 'ours', note: 'the runtime asking patched() (no option)' };
/** Started by a client on the worker's connection, eagerly (decision 72), as startLocalSystem's client does. */
const oursEager: Variant = {
  ...ours,
  label: 'ours-eager',
  startIn: 'worker',
  note: 'ours, started eagerly in the worker',
};

/** The waterfall: each row adds one part of ours' start to the row before. */
function waterfall(): Variant[] {
  const rows: [string, string, BareStart][] = [
    ['bare', 'start, parks on a signal', {}],
    ['+sws', 'signal-with-start carrying the user text', { signalWithStart: true }],
    ['+kind', 'ThreadKind search attribute at start', { kind: true }],
    ['+status', 'AgentStatus search attribute at start', { status: true }],
    ['+metadata', 'memo title, static summary and details', { metadata: true }],
    ['+priority', 'priority key and fairness key', { priority: true }],
    ['+slice', "the first task's local slice (a marker), the tool dispatch in it", { steps: { localActivity: true } }],
    ['+status-upsert', 'AgentStatus waiting_tool upsert', { steps: { statusUpsert: true } }],
    ['+patch', 'a patch marker and its TemporalChangeVersion upsert', { steps: { patch: true } }],
  ];
  let acc: BareStart = {};
  return rows.map(([label, note, add]) => {
    acc = { ...acc, ...add, steps: { ...acc.steps, ...add.steps } };
    return { label, design: 'bare', bare: acc, note };
  });
}

function variants(spec: string): Variant[] {
  return spec.split(',').flatMap((name): Variant[] => {
    if (name === 'waterfall') return [...waterfall(), ours, oursAsk];
    if (name === 'waterfall-eager')
      return [...waterfall().filter((v) => v.label !== '+sws'), ours].map((v) => eagerly(v, v.label));
    if (name === 'ours') return [ours];
    if (name === 'ours-ask') return [oursAsk];
    if (name === 'ours-eager') return [oursEager];
    if (name === 'v01' || name === 'ceiling') return [{ label: name, design: name, note: 'empty-bodied baseline' }];
    // A waterfall row by its label, and (`-eager`) started eagerly in the worker: `bare`, `+slice-eager`.
    const row = waterfall().find((v) => v.label === name.replace(/-eager$/, ''));
    if (row && name.endsWith('-eager') && row.label !== '+sws') return [eagerly(row, name)];
    if (row && !name.endsWith('-eager')) return [row];
    throw new Error(
      `park-rate measures ours, ours-ask, ours-eager, waterfall, waterfall-eager, v01, ceiling or a waterfall row ` +
        `(bare, +kind, …, +patch; -eager for any but +sws), not ${name}`,
    );
  });
}

/** `v` started by a client in the worker's process with eager start: the text travels in no signal. */
function eagerly(v: Variant, label: string): Variant {
  if (v.design === 'ours') return { ...oursEager, label: label === 'ours' ? 'ours-eager' : label };
  return {
    ...v,
    label: label.endsWith('-eager') ? label : `${label}-eager`,
    startIn: 'worker',
    note: `${v.note}, eagerly`,
  };
}

interface Measured {
  label: string;
  round: number;
  agentsPerSecond: number;
  /** CPU ms per parked agent. */
  server: number;
  worker: number;
  driver: number;
  events: number;
  eventTypes: string[];
  /** The visibility store's writes for one parked agent: the insert at start and one update per upsert event. */
  visibilityWrites: number;
}

/** The most common value (the first of them on a tie). */
function mode(values: number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

/** A fresh Temporal server for one measurement: its address, the CPU seconds it has spent so far, and its stop. */
interface Server {
  address: string;
  cpu(): number;
  stop(): Promise<void>;
}

/**
 * The dev server on a new SQLite file, or (`--cluster`) the local multi-shard cluster on new databases of the run's
 * PostgreSQL, whose CPU (the postmaster and its backends, exited ones included) counts as the server's.
 */
async function startServer(tag: string, work: string, postgres: LocalPostgres | undefined): Promise<Server> {
  if (!postgres) {
    const dev = await startDevServer({ ui: false, dbFilename: join(work, `${tag}-temporal.sqlite`) });
    return { address: dev.address, cpu: () => treeCpu(dev.pid), stop: () => dev.stop() };
  }
  const cluster = await startLocalCluster({
    postgres,
    shards: 4,
    processes: 'one',
    database: `temporal_${tag.replace(/\W/g, '_')}`,
    dir: join(work, `cluster-${tag}`),
  });
  const postmaster = postmasterPid(postgres.dataDir)!;
  return {
    address: cluster.address,
    cpu: () => Object.values(cluster.pids).reduce((sum, pid) => sum + treeCpu(pid), 0) + treeCpu(postmaster, true),
    stop: () => cluster.stop(),
  };
}

async function measure(
  v: Variant,
  agents: number,
  work: string,
  bundlePath: string,
  round: number,
  postgres: LocalPostgres | undefined,
) {
  const tag = `${v.label.replace(/\W/g, '')}-${round}`;
  const storeFile = join(work, `${tag}.sqlite`);
  await new SqliteConversationStore(storeFile).close(); // creates the store's file and schema
  const server = await startServer(tag, work, postgres);
  const fleet = new Fleet({
    design: v.design,
    address: server.address,
    store: storeFile,
    bundlePath,
    maxCachedWorkflows: agents + 100,
    activitySlots: 50,
    ...(v.threadOptions && { threadOptions: v.threadOptions }),
    ...(v.bare && { bare: v.bare }),
    ...(v.startIn && { startIn: v.startIn }),
  });
  try {
    await fleet.start();
    // Warm-up: the first starts pay for caches and connections.
    await fleet.park(
      Array.from({ length: 100 }, (_, i) => `${tag}-warm-${i}`),
      200,
    );
    // The driver's own CPU only: the server and the worker are its children.
    const read = () => ({ server: server.cpu(), worker: treeCpu(fleet.pid!), driver: cpuSeconds(process.pid) });
    const cpu0 = read();
    const t0 = performance.now();
    const ids = Array.from({ length: agents }, (_, i) => `${tag}-park-${i}`);
    await fleet.park(ids, 200);
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = read();
    if (fleet.errors.length > 0) throw new Error(`${v.label}: ${fleet.errors.join('; ')}`);
    const per = (k: keyof typeof cpu1) => ((cpu1[k] - cpu0[k]) * 1000) / agents;
    const events = (await fleet.temporal.workflow.getHandle(ids[0]!).fetchHistory()).events ?? [];
    const eventTypes = events.map((e) => typeName(e.eventType));
    const m: Measured = {
      label: v.label,
      round,
      agentsPerSecond: agents / seconds,
      server: per('server'),
      worker: per('worker'),
      driver: per('driver'),
      events: events.length,
      eventTypes,
      visibilityWrites: 1 + eventTypes.filter((t) => t === 'upsert_workflow_search_attributes').length,
    };
    console.log(
      `${v.label}: ${m.agentsPerSecond.toFixed(1)} agents parked/s; CPU ms per agent: server ${m.server.toFixed(2)}, ` +
        `worker ${m.worker.toFixed(2)}, driver ${m.driver.toFixed(2)}; ${m.events} events, ${m.visibilityWrites} ` +
        `visibility writes (load ${loadavg()[0]!.toFixed(1)})`,
    );
    console.log(`  ${eventTypes.join(', ')}`);
    return m;
  } finally {
    await fleet.stop();
    await server.stop();
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const positional = positionals();
  const agents = Number(positional[0] ?? 2000);
  const list = variants(positional[1] ?? 'ours,bare');
  const rounds = Number(flag('--rounds') ?? 1);
  const out = flag('--out');
  // Gone at exit (infra/scratch.ts): ~200 MB of server databases per run.
  const work = runScratch('infinity-park-rate-').dir;
  const bundlePath = await writeThreadBundle(work);
  const postgres = process.argv.includes('--cluster')
    ? await startLocalPostgres({ dataDir: join(work, 'postgres'), settings: { max_connections: 400 } })
    : undefined;
  const loadBefore = loadavg();
  const results: Measured[] = [];
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) console.log(`round ${round}/${rounds}`);
    for (const v of list) results.push(await measure(v, agents, work, bundlePath, round, postgres));
  }
  const loadAfter = loadavg();
  await postgres?.stop();

  // Ratios to `bare` within each round, then the median over rounds; the other columns are medians too.
  const hasBare = list.some((v) => v.label === 'bare');
  // The events column: the most common count (a first task that timed out under load adds three).
  const rows = list.map((v) => {
    const mine = results.filter((r) => r.label === v.label);
    const ratios = hasBare
      ? mine.map(
          (r) => r.agentsPerSecond / results.find((b) => b.label === 'bare' && b.round === r.round)!.agentsPerSecond,
        )
      : [];
    const med = (k: 'agentsPerSecond' | 'server' | 'worker' | 'driver') => median(mine.map((r) => r[k]));
    // CPU per agent in all: on a shared machine the steadier figure (a rate depends on what else runs).
    const cpu = (r: Measured) => r.server + r.worker + r.driver;
    const cpuRatios = hasBare
      ? mine.map((r) => cpu(results.find((b) => b.label === 'bare' && b.round === r.round)!) / cpu(r))
      : [];
    return {
      label: v.label,
      note: v.note,
      agentsPerSecond: med('agentsPerSecond'),
      vsBare: ratios.length > 0 ? median(ratios) : undefined,
      ratios,
      server: med('server'),
      worker: med('worker'),
      driver: med('driver'),
      cpuTotal: median(mine.map(cpu)),
      cpuVsBare: cpuRatios.length > 0 ? median(cpuRatios) : undefined,
      events: mode(mine.map((r) => r.events)),
      visibilityWrites: mode(mine.map((r) => r.visibilityWrites)),
    };
  });
  const f = (n: number, d = 1) => n.toFixed(d);
  const table = [
    '| design | adds | agents/s | × bare (per round) | server ms | worker ms | driver ms | CPU ms in all | × bare by CPU | events | visibility writes |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(
      (r) =>
        `| ${r.label} | ${r.note} | ${f(r.agentsPerSecond)} | ${r.vsBare === undefined ? '' : `${f(r.vsBare, 2)} (${r.ratios.map((x) => f(x, 2)).join(', ')})`} | ` +
        `${f(r.server)} | ${f(r.worker)} | ${f(r.driver)} | ${f(r.cpuTotal)} | ${r.cpuVsBare === undefined ? '' : f(r.cpuVsBare, 2)} | ` +
        `${r.events} | ${r.visibilityWrites} |`,
    ),
  ].join('\n');
  const load = `load average ${loadBefore.map((l) => f(l, 2)).join(' ')} before, ${loadAfter.map((l) => f(l, 2)).join(' ')} after`;
  console.log(`\n${agents} agents per design, ${rounds} round(s), medians; ${load}\n${table}`);
  if (hasBare && list.some((v) => v.label === 'ours')) {
    const r = rows.find((x) => x.label === 'ours')!;
    console.log(
      `ours / bare: ${f(r.vsBare!, 2)} agents/s, ${f(r.cpuVsBare!, 2)} by CPU per agent (medians of the rounds' ratios)`,
    );
  }
  if (out) {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const base = join(__dirname, '..', 'results', `${out}-${stamp}`);
    writeFileSync(`${base}.json`, JSON.stringify({ agents, rounds, loadBefore, loadAfter, rows, results }, null, 2));
    writeFileSync(
      `${base}.md`,
      `# park-rate ${out}\n\n${agents} agents per design, ${rounds} round(s); ${load}\n\n${table}\n`,
    );
    console.log(`wrote ${base}.{json,md}`);
  }
}

runMain(main);
