/**
 * `npx tsx bench/probes/turn-cost.ts [lengths] [agents] [--out name]`: whether a turn costs the same at every length of
 * a conversation (issue 31 §3). A few agents (default 4) of the benchmark's turn (user text → completion that calls a
 * tool → the tool's result → completion that ends the turn; the simulated model, ~1.2 KB per completion) grow to each
 * length in turn (default 10,100,1000,3000), continue-as-new included (the runtime's default bound of 2,000 events per
 * run). At each length, over a window of the turns just before it, per turn: Temporal history bytes and events added
 * (every run of the thread, from the server's own counts), conversation-store bytes added (the SQLite database's
 * pages in use), worker and server CPU (the worker's CPU is the slices' and the workflow tasks'), the tool result →
 * next completion latency (p50, p99); and at the length itself: the replay time of the thread's current run (what a
 * worker pays after the workflow was evicted from its cache), its history events and bytes, and the run count.
 * `--item-cache-mib n` sets the worker store's item cache (default 32 MiB). Writes
 * bench/results/<name>-<time>.{json,md,svg} (name default `turn-cost`).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { Fleet } from '../lib/fleet';
import { flag, positionals } from '../lib/args';
import { runMain } from '../lib/main';
import { probeBase } from '../lib/probe-base';
import Database from 'better-sqlite3';
import { treeCpu } from '../lib/proc';
import { median, percentile } from '../lib/stats';
import { linePanel, type Series } from '../lib/chart';

/**
 * The store's data in bytes: pages in use as a reader sees the database (the WAL's committed pages included, free
 * pages not), so neither the WAL file's growth nor its checkpoints show as the conversation's cost.
 */
function storeBytes(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    const n = (pragma: string) => Number(db.pragma(pragma, { simple: true }));
    return (n('page_count') - n('freelist_count')) * n('page_size');
  } finally {
    db.close();
  }
}

interface RunSize {
  runId: string;
  events: number;
  bytes: number;
}

/** Every run of the thread from `since` (a run id) to the current one, with the server's event count and bytes. */
async function runsSince(client: Client, id: string, since?: string): Promise<RunSize[]> {
  const out: RunSize[] = [];
  let runId: string | undefined;
  for (;;) {
    const d = await client.workflow.getHandle(id, runId).describe();
    out.unshift({ runId: d.runId, events: d.historyLength, bytes: d.historySize ?? 0 });
    if (d.runId === since) return out;
    // The previous run: named by the first event of this one.
    const first = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId: id, runId: d.runId },
      maximumPageSize: 1,
    });
    const prev = first.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!prev || since === undefined) return out;
    runId = prev;
  }
}

/** History events and bytes the thread added since `before` (its runs then), and its runs now. */
async function historyAdded(client: Client, id: string, before: RunSize) {
  const runs = await runsSince(client, id, before.runId);
  const events = runs.reduce((s, r) => s + r.events, 0) - before.events;
  const bytes = runs.reduce((s, r) => s + r.bytes, 0) - before.bytes;
  return { events, bytes, now: runs[runs.length - 1]!, newRuns: runs.length - 1 };
}

interface Point {
  length: number;
  window: number;
  historyBytesPerTurn: number;
  historyEventsPerTurn: number;
  storeBytesPerTurn: number;
  workerCpuMsPerTurn: number;
  serverCpuMsPerTurn: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  replayMs: number;
  currentRunEvents: number;
  currentRunBytes: number;
  runs: number;
  secondsToGrow: number;
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const positional = positionals();
  const lengths = (positional[0] ?? '10,100,1000,3000').split(',').map(Number);
  const agents = Number(positional[1] ?? 4);
  const out = flag('--out') ?? 'turn-cost';
  // The worker store's item cache (default 32 MiB): threads whose parsed items do not all fit are read and parsed
  // whole from the store at every slice.
  const cacheMiB = flag('--item-cache-mib') === undefined ? undefined : Number(flag('--item-cache-mib'));
  const { server, storeFile, bundlePath, fleetOptions } = await probeBase('turn-cost');
  const fleet = new Fleet({
    ...fleetOptions(),
    ...(cacheMiB !== undefined && { itemCacheBytes: cacheMiB * 1024 * 1024 }),
  });
  const loadBefore = loadavg();
  const points: Point[] = [];
  const t0 = performance.now();
  try {
    await fleet.start();
    const client = fleet.temporal;
    const ids = Array.from({ length: agents }, (_, i) => `turn-cost-${i}-${Date.now()}`);
    let done = 0;
    for (const length of lengths) {
      // The window: the turns just before the length (at most 100, half the length for short ones).
      const window = Math.max(1, Math.min(100, Math.floor(length / 2)));
      const grow = length - window - done;
      const tg = performance.now();
      if (done === 0) {
        await fleet.runTurns(ids, Math.max(1, grow), 0);
        done = Math.max(1, grow);
      } else if (grow > 0) {
        await fleet.moreTurns(ids, grow);
        done += grow;
      }
      const turns = length - done;
      const before = await Promise.all(ids.map(async (id) => (await runsSince(client, id))[0]!));
      const store0 = storeBytes(storeFile);
      const cpu0 = { worker: treeCpu(fleet.pid!), server: treeCpu(server.pid) };
      fleet.resetCounters();
      await fleet.moreTurns(ids, turns);
      done += turns;
      const cpu1 = { worker: treeCpu(fleet.pid!), server: treeCpu(server.pid) };
      const store1 = storeBytes(storeFile);
      const added = await Promise.all(ids.map((id, i) => historyAdded(client, id, before[i]!)));
      const n = turns * agents;
      // Replay of each thread's current run, as a worker does after an eviction (the second of two: warm bundle).
      const replays: number[] = [];
      for (const id of ids) {
        const history = await client.workflow.getHandle(id).fetchHistory();
        let ms = 0;
        for (let k = 0; k < 2; k++) {
          const tr = performance.now();
          await Worker.runReplayHistory({ workflowBundle: { codePath: bundlePath } }, history, id);
          ms = performance.now() - tr;
        }
        replays.push(ms);
      }
      const status = await client.workflow.getHandle(ids[0]!).query<{ runs: number }>('status');
      const p: Point = {
        length,
        window: turns,
        historyBytesPerTurn: added.reduce((s, a) => s + a.bytes, 0) / n,
        historyEventsPerTurn: added.reduce((s, a) => s + a.events, 0) / n,
        storeBytesPerTurn: (store1 - store0) / n,
        workerCpuMsPerTurn: ((cpu1.worker - cpu0.worker) * 1000) / n,
        serverCpuMsPerTurn: ((cpu1.server - cpu0.server) * 1000) / n,
        latencyP50Ms: percentile(fleet.latencies, 50),
        latencyP99Ms: percentile(fleet.latencies, 99),
        replayMs: median(replays),
        currentRunEvents: median(added.map((a) => a.now.events)),
        currentRunBytes: median(added.map((a) => a.now.bytes)),
        runs: status.runs,
        secondsToGrow: (performance.now() - tg) / 1000,
      };
      points.push(p);
      if (fleet.errors.length > 0) throw new Error(fleet.errors.join('; '));
      console.log(
        `${length} turns: per turn ${p.historyEventsPerTurn.toFixed(2)} events, ${p.historyBytesPerTurn.toFixed(0)} B history, ` +
          `${p.storeBytesPerTurn.toFixed(0)} B store, worker ${p.workerCpuMsPerTurn.toFixed(1)} ms, server ` +
          `${p.serverCpuMsPerTurn.toFixed(1)} ms CPU, latency p50 ${p.latencyP50Ms.toFixed(1)} ms; replay of the current ` +
          `run (${p.currentRunEvents} events, ${(p.currentRunBytes / 1024).toFixed(0)} KiB) ${p.replayMs.toFixed(0)} ms; ` +
          `run ${p.runs}; ${p.secondsToGrow.toFixed(0)} s (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    await fleet.stop();
    await server.stop();
  }
  const loadAfter = loadavg();
  const f = (x: number, d = 1) => x.toFixed(d);
  const load = `load average ${loadBefore.map((l) => f(l, 2)).join(' ')} before, ${loadAfter.map((l) => f(l, 2)).join(' ')} after`;
  const table = [
    '| turns | window | history events / turn | history bytes / turn | store bytes / turn | worker CPU ms / turn | server CPU ms / turn | result → completion p50 / p99 ms | replay of current run ms (events, KiB) | runs |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...points.map(
      (p) =>
        `| ${p.length} | ${p.window} | ${f(p.historyEventsPerTurn, 2)} | ${f(p.historyBytesPerTurn, 0)} | ${f(p.storeBytesPerTurn, 0)} | ` +
        `${f(p.workerCpuMsPerTurn)} | ${f(p.serverCpuMsPerTurn)} | ${f(p.latencyP50Ms)} / ${f(p.latencyP99Ms)} | ` +
        `${f(p.replayMs, 0)} (${p.currentRunEvents}, ${f(p.currentRunBytes / 1024, 0)}) | ${p.runs} |`,
    ),
  ].join('\n');
  const minutes = (performance.now() - t0) / 60000;
  console.log(`\n${agents} agents; ${load}; ${f(minutes)} min\n${table}`);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = join(__dirname, '..', 'results', `${out}-${stamp}`);
  writeFileSync(`${base}.json`, JSON.stringify({ agents, lengths, loadBefore, loadAfter, minutes, points }, null, 2));
  writeFileSync(
    `${base}.md`,
    `# Cost of a turn by conversation length\n\n${agents} agents, simulated model, item cache ${cacheMiB ?? 32} MiB; ` +
      `${load}; ${f(minutes)} min.\n\n${table}\n`,
  );
  writeFileSync(`${base}.svg`, chart(points, agents));
  console.log(`wrote ${base}.{json,md,svg}`);
}

/** Four panels against conversation length: durable bytes, CPU, latency, replay. */
function chart(points: Point[], agents: number): string {
  const s = (name: string, color: string, y: (p: Point) => number): Series => ({
    name,
    color,
    points: points.map((p) => ({ x: p.length, y: y(p) })),
  });
  const W = 1000;
  const H = 760;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">Cost of one turn by conversation length (${agents} agents)</text>`,
    linePanel(90, 70, 370, 250, 'Durable bytes added per turn', 'turns', 'bytes', [
      s('Temporal history', '#1f77b4', (p) => p.historyBytesPerTurn),
      s('conversation store', '#2ca02c', (p) => p.storeBytesPerTurn),
    ]),
    linePanel(590, 70, 370, 250, 'CPU per turn', 'turns', 'ms', [
      s('worker', '#ff7f0e', (p) => p.workerCpuMsPerTurn),
      s('server', '#7f7f7f', (p) => p.serverCpuMsPerTurn),
    ]),
    linePanel(90, 440, 370, 250, 'Tool result → next completion', 'turns', 'ms', [
      s('p50', '#9467bd', (p) => p.latencyP50Ms),
      s('p99', '#d62728', (p) => p.latencyP99Ms),
    ]),
    linePanel(590, 440, 370, 250, 'Replay of the current run after eviction', 'turns', 'ms', [
      s('replay', '#8c564b', (p) => p.replayMs),
    ]),
    `</svg>`,
  ].join('\n');
}

runMain(main);
