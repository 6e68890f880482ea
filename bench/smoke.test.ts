/**
 * `npm run bench:smoke`: the whole benchmark harness on a tiny configuration, so it never rots. It checks that the
 * run finished and wrote well-formed results — never a timing.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { GROUPS, type ScalingResults } from './phases/scaling';
import type { AgentsWavesResults } from './probes/agents-waves';
import type { Results } from './results';

/**
 * Runs `npm run bench -- --profile <profile>` into a new directory; returns the directory.
 *
 * The run takes minutes, and this process is a vitest worker whose calls to the runner time out after 60 s unanswered
 * ("Timeout calling onTaskUpdate", failing a run whose tests passed): its event loop must stay free for the replies.
 * So nothing synchronous waits on the run (no execFileSync), and none of the run's output passes through here: the
 * bench and every process it starts (dev server, cluster, worker processes) write to `<dir>.log` through the file
 * descriptors they inherit, instead of a pipe this process reads and writes on to vitest's, which then writes it to
 * the terminal — a relay that ties the runner's replies to whatever drains that terminal. Results are read with
 * promises.
 */
async function runBench(profile: string, timeoutMs: number): Promise<string> {
  return runInto(`bench-${profile}`, (out) => ['run.ts', '--profile', profile, '--out', out], timeoutMs);
}

/** Runs `bench/<args(out)>` (a script and its arguments) with `out`, a new directory; returns the directory. */
async function runInto(name: string, args: (out: string) => string[], timeoutMs: number): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), `${name}-`));
  const logFile = `${out}.log`;
  const log = openSync(logFile, 'w');
  const [script, ...rest] = args(out);
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, script!), ...rest], {
      stdio: ['ignore', log, log],
    });
    // 'exit', not 'close': a process the bench left behind may hold the log open, and must not hold up the test.
    const ended = await new Promise<number | NodeJS.Signals | null>((resolve, reject) => {
      const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
      child.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(code ?? signal);
      });
    });
    if (ended !== 0) {
      const tail = (await readFile(logFile, 'utf8')).split('\n').slice(-40).join('\n');
      throw new Error(`bench ${args(out).join(' ')} ended with ${ended}; the last lines of ${logFile}:\n${tail}`);
    }
  } finally {
    closeSync(log);
  }
  return out;
}

it('runs every design and writes JSON, a markdown summary and a chart', async () => {
  const out = await runBench('smoke', 540_000);
  const files = await readdir(out);
  const json = files.find((f) => f.endsWith('.json'))!;
  expect(files.filter((f) => f.startsWith(json.replace('.json', '')))).toHaveLength(3);
  const r = JSON.parse(await readFile(join(out, json), 'utf8')) as Results;
  // Named by the release and the commit it measured (issue 42 §4).
  expect(r.version).toMatch(/^\d+\.\d+\.\d+/);
  expect(r.commit).toMatch(/^([0-9a-f]{40}(-dirty)?|unknown)$/);
  expect(Object.keys(r.designs).sort()).toEqual(['blocking', 'ceiling', 'ours', 'v01']);
  for (const [name, d] of Object.entries(r.designs)) {
    expect(d.errors, name).toEqual([]);
    expect(d.waves).toHaveLength(2);
    for (const w of d.waves) {
      // 3 agents × 2 turns × 2 completions each, and a latency for every tool result.
      expect(w.completions, name).toBe(12);
      expect(w.latencyMs.n, name).toBe(6);
      expect(Number.isFinite(w.completionsPerSecond)).toBe(true);
    }
    expect(d.completionsPerSecond, name).toBeGreaterThan(0);
    expect(d.eventsPerTurn, name).toBeGreaterThan(0);
    expect(Number.isFinite(d.cpuMsPerCompletion.server) && Number.isFinite(d.cpuMsPerCompletion.worker), name).toBe(
      true,
    );
    expect(d.restRss, name).toBeGreaterThan(0);
  }
  // Events by type for ours and the v0.1 reference, adding up to the events per turn of each sampled history.
  for (const name of ['ours', 'v01'] as const) {
    const byType = r.designs[name]!.eventsByType!;
    expect(byType.workflow_execution_started, name).toBeGreaterThan(0);
    for (const w of r.designs[name]!.waves)
      expect(Object.values(w.eventsByType).reduce((a, b) => a + b, 0)).toBeCloseTo(w.eventsPerTurn, 6);
  }
  // The v0.1 pattern schedules regular activities; the ceiling's completions are local activities (markers).
  expect(r.designs.v01!.eventsByType!.activity_task_scheduled).toBeGreaterThan(0);
  expect(r.designs.ceiling!.waves[0]!.eventsByType.marker_recorded).toBeGreaterThan(0);
  expect(r.designs.ceiling!.waves[0]!.eventsByType.activity_task_scheduled ?? 0).toBe(0);
  expect(r.serverRestRss).toBeGreaterThan(0);
  for (const key of ['oursOverV01Throughput', 'oursOverCeilingThroughput', 'oursOverBlockingThroughput'] as const) {
    expect(Number.isFinite(r.ratios[key]), key).toBe(true);
    expect(r.ratios[key], key).toBeGreaterThan(0);
  }
  const density = r.density!;
  expect(density.points.map((p) => p.agents)).toEqual([0, 10, 20]);
  expect(density.wake).toMatchObject({ sample: 5, exact: 5 });
  // Fewer agents than the cache holds, at most half the cache busy: no slice is retried, so no call goes out twice.
  expect(density.dispatchedAgain).toBe(0);
  expect(Number.isFinite(density.slopeBytesPerAgent)).toBe(true);
  expect(density.long!.points.map((p) => p.agents)).toEqual([0, 4]);
  expect(density.long!.historyTurns).toBe(10);
  for (const key of ['slopeBytesPerAgent', 'workerSlopeBytesPerAgent', 'serverSlopeBytesPerAgent'] as const)
    expect(Number.isFinite(density.long![key]), key).toBe(true);
  expect(
    Number.isFinite(density.long!.diskBytesPerAgent.temporal) && Number.isFinite(density.long!.diskBytesPerAgent.store),
  ).toBe(true);
  // The priorities phase: the user's 3 turns measured in each run, every event sent, no delivery errors.
  const p = r.priorities!;
  for (const [name, run] of Object.entries(p.runs)) {
    expect(run.errors, name).toEqual([]);
    expect(run.n, name).toBe(3);
    expect(run.events, name).toBe(name === 'alone' ? 0 : 50);
  }
  expect(Object.keys(p.runs).sort()).toEqual(['alone', 'targets', 'with', 'without']);
  for (const [name, run] of Object.entries(p.runs)) {
    if (name === 'alone') continue;
    // Every event was taken in by some background slice, after the flood began.
    expect(run.backgroundCompletions, name).toBeGreaterThan(0);
    expect(run.backgroundCompletions, name).toBeLessThanOrEqual(run.events);
    expect(run.drainedMs, name).toBeGreaterThan(0);
  }
  for (const key of [
    'idleP50Ms',
    'floodWithoutP50Ms',
    'floodWithP50Ms',
    'floodWithOverIdleP50',
    'floodWithTargetsP50Ms',
    'floodWithTargetsOverIdleP50',
  ] as const)
    expect(Number.isFinite(p[key]), key).toBe(true);
  // The governed phase: every thread finished in both runs, the budgeted tenant's too once its budget was lifted.
  const g = r.governed!;
  for (const run of [g.off, g.on]) {
    expect(run.completions).toBe(g.threads);
    expect(run.budgetedDoneAfterRaise).toBe(run.budgetedThreads);
    // At this size every thread of the budgeted tenant may be running when it crosses its budget (one slice each).
    expect(run.budgetedDoneBeforeRaise).toBeLessThanOrEqual(run.budgetedThreads);
    expect(run.tenantCompletions).toHaveLength(g.tenants - 1);
    for (const key of ['tenantShareErrorMaxPct', 'userP50Ms', 'userIdleP50Ms', 'budgetOvershootMaxTokens'] as const)
      expect(Number.isFinite(run[key]), key).toBe(true);
  }
  expect(r.rssTimeline.length).toBeGreaterThan(0);
  expect(await readFile(join(out, json.replace('.json', '.svg')), 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>$/);
  const md = await readFile(join(out, json.replace('.json', '.md')), 'utf8');
  for (const design of ['ours', 'v01', 'ceiling', 'blocking']) expect(md).toContain(`| ${design} |`);
  expect(md).toContain('ours / v01');
  expect(md).toContain('(ours | v01)');
  expect(md).toContain('Long conversations');
  expect(md).toContain('Governed:');
});

it('runs the scaling matrix: every server × store × worker count, each cell completing all its turns', async () => {
  const out = await runBench('scaling-smoke', 300_000);
  const files = await readdir(out);
  const json = files.find((f) => f.endsWith('.json'))!;
  expect(json).toMatch(/^scaling-smoke-/);
  expect(files.filter((f) => f.startsWith(json.replace('.json', '')))).toHaveLength(3);
  const r = JSON.parse(await readFile(join(out, json), 'utf8')) as ScalingResults;
  const { agentsPerWave: agents, turns } = r.config;
  const cells = r.scaling.cells;
  expect(cells.map((c) => `${c.server}/${c.store}/${c.workers}`).sort()).toEqual(
    ['cluster', 'dev']
      .flatMap((s) => ['postgres', 'sqlite'].flatMap((st) => [1, 2].map((w) => `${s}/${st}/${w}`)))
      .sort(),
  );
  for (const c of cells) {
    const name = `${c.server}/${c.store}/${c.workers}`;
    expect(c.errors, name).toEqual([]);
    expect(c.complete, name).toBe(true);
    expect(c.turnsEnded, name).toBe(agents * turns);
    expect(c.completions, name).toBe(agents * turns * 2);
    expect(c.latencyMs.n, name).toBe(agents * turns);
    expect(c.completionsPerSecond, name).toBeGreaterThan(0);
    for (const g of GROUPS) {
      expect(Number.isFinite(c.cpuMsPerCompletion[g]) && Number.isFinite(c.cores[g]), `${name} ${g}`).toBe(true);
      expect(c.rss[g], `${name} ${g}`).toBeGreaterThan(0);
    }
    expect(GROUPS).toContain(c.bottleneck);
    expect(Object.values(c.postgresCpuMsPerCompletion).every(Number.isFinite), name).toBe(true);
    expect(c.serverRestRss, name).toBeGreaterThan(0);
  }
  expect(r.restRss.postgres).toBeGreaterThan(0);
  expect(await readFile(join(out, json.replace('.json', '.svg')), 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>$/);
  const md = await readFile(join(out, json.replace('.json', '.md')), 'utf8');
  expect(md).toContain(
    '| worker processes | dev server · SQLite | dev server · PostgreSQL | cluster · SQLite | cluster · PostgreSQL |',
  );
  expect(md.match(/\| \*\*(server|workers|postgres|driver)\*\* \|$/gm)).toHaveLength(cells.length);
});

it('runs the agents-waves probe: one-agent and two-agent waves, each two-agent wave on both agents', async () => {
  const out = await runInto('agents-waves', (o) => ['probes/agents-waves.ts', '4', '1', '1', '--out', o], 180_000);
  const files = await readdir(out);
  expect(files).toHaveLength(1);
  const r = JSON.parse(await readFile(join(out, files[0]!), 'utf8')) as AgentsWavesResults;
  expect(r.errors).toEqual([]);
  // A warm-up wave of each arm, then one measured pair.
  expect(r.waves.map((w) => `${w.arm}${w.wave}`)).toEqual(['one0', 'two0', 'one1', 'two2']);
  for (const w of r.waves) {
    // 4 threads × 1 turn × 2 completions, and a latency for every tool result.
    expect(w.completions).toBe(8);
    expect(w.latencyN).toBe(4);
    expect(w.slicesByAgent).toEqual(w.arm === 'one' ? { alpha: 8 } : { alpha: 4, beta: 4 });
  }
  for (const table of [r.medians.one, r.medians.two, r.ratio, r.pairRatio])
    for (const [k, v] of Object.entries(table)) expect(Number.isFinite(v) && v > 0, k).toBe(true);
});
