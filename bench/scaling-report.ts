/** The scaling profile's summary (markdown) and chart (SVG): completions/s and CPU per completion per cell. */
import { type BarGroup, esc, groupedBarPanel } from './lib/bars';
import { fmtBytes } from './lib/stats';
import { GROUPS, type Group, type ScalingCell, type ScalingResults } from './phases/scaling';

const f = (n: number | undefined | null, d = 1) =>
  n !== undefined && n !== null && Number.isFinite(n) ? n.toFixed(d) : 'n/a';
const SERVER_NAMES = { dev: 'dev server', cluster: 'cluster' } as const;
const STORE_NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;
const columnName = (c: ScalingCell) => `${SERVER_NAMES[c.server]} · ${STORE_NAMES[c.store]}`;
const GROUP_COLORS: Record<Group, string> = {
  server: '#1f77b4',
  workers: '#ff7f0e',
  postgres: '#2ca02c',
  driver: '#9467bd',
};
const WORKER_COLORS = ['#aec7e8', '#6baed6', '#2171b5', '#08306b'];

/** Server × store combinations in the order the run met them. */
function columns(cells: ScalingCell[]): string[] {
  return [...new Set(cells.map(columnName))];
}

/** Completions/s per worker count (rows) and server × store (columns), with the speed-up over the first row. */
function pivot(cells: ScalingCell[]): string[] {
  const cols = columns(cells);
  const workers = [...new Set(cells.map((c) => c.workers))];
  const first = new Map(cols.map((col) => [col, cells.find((c) => columnName(c) === col && c.workers === workers[0])]));
  const lines = [`| worker processes | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---|').join('')}`];
  for (const w of workers) {
    const row = cols.map((col) => {
      const c = cells.find((x) => columnName(x) === col && x.workers === w);
      if (!c) return '—';
      const base = first.get(col)!;
      const speedup = w === workers[0] ? '' : ` (×${f(c.completionsPerSecond / base.completionsPerSecond, 2)})`;
      return `${f(c.completionsPerSecond)}${speedup}${c.complete ? '' : ' **incomplete**'}`;
    });
    lines.push(`| ${w} | ${row.join(' | ')} |`);
  }
  return lines;
}

function cellRow(c: ScalingCell): string {
  const cpu = c.cpuMsPerCompletion;
  const pg = c.postgresCpuMsPerCompletion;
  const cores = GROUPS.reduce((s, g) => s + c.cores[g], 0);
  return (
    `| ${c.workers} | ${SERVER_NAMES[c.server]} | ${STORE_NAMES[c.store]} | ${f(c.completionsPerSecond)}${c.complete ? '' : ` (incomplete: ${c.turnsEnded} turns)`} | ` +
    `${f(c.latencyMs.p50)} / ${f(c.latencyMs.p99)} | ${f(cpu.server, 2)} | ${f(cpu.workers, 2)} | ` +
    `${f(cpu.postgres, 2)} (${f(pg.temporal, 2)} + ${f(pg.store, 2)} + ${f(pg.other, 2)}) | ${f(cpu.driver, 2)} | ` +
    `${GROUPS.map((g) => f(c.cores[g], 2)).join(', ')} (${f(cores, 2)}; other ${f(c.otherCores, 2)}) | ${GROUPS.map((g) => fmtBytes(c.rss[g])).join(', ')} | **${c.bottleneck}** |`
  );
}

export function scalingSummary(r: ScalingResults): string {
  const c = r.config;
  const sc = c.scaling!;
  const cells = [...r.scaling.cells].sort(
    (a, b) =>
      a.workers - b.workers ||
      sc.servers.indexOf(a.server) - sc.servers.indexOf(b.server) ||
      sc.stores.indexOf(a.store) - sc.stores.indexOf(b.store),
  );
  const errors = r.scaling.cells.filter((x) => x.errors.length > 0);
  return [
    `## Benchmark: ${r.profile}`,
    '',
    `Each cell: ${c.agentsPerWave} agents × ${c.turns} turns (two completions each), tool delay ${c.toolDelayMs} ms, after a warm-up of ` +
      `${sc.warmupAgents} agents × 1 turn; a new task queue served by that many worker processes of \`ours\`, a new store, a fresh server. Dev server: ` +
      `\`temporal server start-dev\` (SQLite, one shard). Cluster: \`temporal-server\`, ${sc.shards} shards, one process, persistence on ` +
      `PostgreSQL. One PostgreSQL for the run: the clusters' databases and every cell's store database. ${r.machine.cpus} cores.`,
    '',
    '### Completions/s (speed-up over the first row)',
    '',
    ...pivot(r.scaling.cells),
    '',
    '### Cells',
    '',
    '| workers | server | store | completions/s | result→next completion p50 / p99 (ms) | CPU ms / completion: server | workers | PostgreSQL (Temporal + store + other) | driver | ' +
      'cores busy: server, workers, PostgreSQL, driver (sum; anything else) | peak memory: server, workers, PostgreSQL (PSS), driver | bottleneck |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...cells.map(cellRow),
    '',
    "Bottleneck: the process group with the most CPU per completion. PostgreSQL's CPU is split by the database its backends " +
      'served; "other" is its background processes and backends that exited during the cell. Cores busy: CPU seconds per ' +
      `second of the cell, out of ${r.machine.cpus}; "anything else" is the rest of the machine's busy time (the kernel, other programs).`,
    ...(errors.length > 0
      ? [
          '',
          `Errors: ${errors.map((x) => `${columnName(x)}, ${x.workers} workers: ${x.errors.join('; ')}`).join(' — ')}`,
        ]
      : []),
    '',
  ].join('\n');
}

/** Per server × store, one bar per worker count: completions/s, and CPU per completion stacked by process group. */
export function scalingChart(r: ScalingResults): string {
  const cells = r.scaling.cells;
  const workers = [...new Set(cells.map((c) => c.workers))].sort((a, b) => a - b);
  const wColor = (w: number) => WORKER_COLORS[Math.min(workers.indexOf(w), WORKER_COLORS.length - 1)]!;
  const groupsOf = (parts: (c: ScalingCell) => { value: number; color: string }[]): BarGroup[] =>
    columns(cells).map((name) => ({
      name: name.replace(' · ', '\n'),
      bars: cells
        .filter((c) => columnName(c) === name)
        .sort((a, b) => a.workers - b.workers)
        .map((c) => ({ label: `${c.workers}w`, parts: parts(c) })),
    }));
  const throughput = groupsOf((c) => [{ value: c.completionsPerSecond, color: wColor(c.workers) }]);
  const cpu = groupsOf((c) => GROUPS.map((g) => ({ value: c.cpuMsPerCompletion[g], color: GROUP_COLORS[g] })));
  const W = 1200;
  const H = 480;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${esc(`infinity-temporal scaling (${r.profile}, ${r.machine.cpus} cores)`)}</text>`,
    groupedBarPanel(
      { x: 70, y: 70, w: 500, h: 300, title: 'Completions per second', yLabel: 'completions/s' },
      throughput,
      workers.map((w) => ({ name: `${w} worker process${w === 1 ? '' : 'es'}`, color: wColor(w) })),
    ),
    groupedBarPanel(
      { x: 670, y: 70, w: 500, h: 300, title: 'CPU ms per completion by process group', yLabel: 'CPU ms / completion' },
      cpu,
      GROUPS.map((g) => ({ name: g, color: GROUP_COLORS[g] })),
    ),
    `</svg>`,
  ].join('\n');
}
