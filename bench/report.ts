/** The run's summary in markdown (the `.md` file and what `npm run bench` prints). */
import { fmtBytes, median } from './lib/stats';
import type { PriorityRun, Results } from './results';
import type { GovernedRun } from './phases/governed';

const f = (n: number | undefined | null, d = 1) =>
  n !== undefined && n !== null && Number.isFinite(n) ? n.toFixed(d) : 'n/a';
/** Bytes in KiB; `null` is a NaN that went through JSON. */
const kib = (bytes: number | null) => (bytes === null ? 'n/a' : `${f(bytes / 1024, 2)} KiB`);
const count = (n: number | null) => (n !== null && Number.isFinite(n) ? n.toLocaleString('en-US') : 'n/a');

export function summary(r: Results): string {
  const c = r.config;
  const lines = [
    `## Benchmark: ${r.profile}`,
    '',
    `Release ${r.version ?? '?'}, commit ${r.commit ?? '?'}.`,
    '',
    `${c.waves} waves × ${c.agentsPerWave} agents × ${c.turns} turns, tool delay ${c.toolDelayMs} ms; ` +
      `${c.parked} parked agents per design; density ${c.density.join(', ')}; long-conversation density ${c.longDensity.join(', ') || '—'}. Medians over waves.` +
      (c.noStatusAttribute ? ' Ours ran without the AgentStatus search attribute.' : ''),
    '',
    '| design | completions/s | result→next completion p50 / p99, saturated (ms) | same, at the latency load (ms) | history events / turn | workflow tasks / completion | CPU ms / completion (server, worker) | worker RSS at rest | worker RSS with N agents waiting on tools (Δ from 0; slope over N…3N) |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [name, d] of Object.entries(r.designs)) {
    const w = d.waves;
    lines.push(
      `| ${name} | ${f(d.completionsPerSecond)} | ${f(median(w.map((x) => x.latencyMs.p50)))} / ${f(median(w.map((x) => x.latencyMs.p99)))} | ` +
        `${d.latency ? `${f(d.latency.p50)} / ${f(d.latency.p99)} (${d.latency.agents} agents, ${d.latency.toolDelayMs / 1000} s tools)` : '—'} | ` +
        `${f(d.eventsPerTurn)} | ${f(median(w.map((x) => x.workflowTasksPerCompletion)), 2)} | ${f(d.cpuMsPerCompletion.server, 2)}, ${f(d.cpuMsPerCompletion.worker, 2)} | ` +
        `${fmtBytes(d.restRss)} | ` +
        `${d.parked ? `${fmtBytes(d.parked.points[1]!.worker)} (Δ ${fmtBytes(d.parked.workerDeltaBytes)}; ${kib(d.parked.workerBytesPerWaitingAgent)} per waiting agent)` : '—'} |`,
    );
  }
  const q = r.ratios;
  lines.push(
    '',
    `Designs: \`v01\` is release 0.1's operations per turn with empty bodies (a fixed reference); \`ceiling\` is the current operations per turn ` +
      `(completions as local activities) with empty bodies. Dev server RSS at rest (before any worker): ${fmtBytes(r.serverRestRss)}.`,
    '',
    `Throughput: ours / v01 **${f(q.oursOverV01Throughput, 2)}**; ours / ceiling **${f(q.oursOverCeilingThroughput, 2)}**; ours / blocking ${f(q.oursOverBlockingThroughput, 2)}.`,
    `Parked: worker memory per waiting agent, ours / blocking **${q.parkedWorkerPerAgentOursOverBlocking < 0 ? '0 (ours did not grow)' : f(q.parkedWorkerPerAgentOursOverBlocking, 3)}**; ` +
      `worker RSS growth from 0 to ${c.parked} waiting agents, ours / blocking ${f(q.parkedWorkerDeltaOursOverBlocking, 3)}; ` +
      `whole worker RSS with ${c.parked} waiting, ours / blocking ${f(q.parkedWorkerRssOursOverBlocking, 3)}.`,
  );
  lines.push(...eventsByType(r));
  lines.push(...priorities(r));
  lines.push(...density(r));
  lines.push(...governed(r));
  lines.push(
    '',
    `Peak total RSS ${fmtBytes(r.budget.peakTotalRssBytes)}; memory budget: ${r.budget.mode}${r.budget.withinBudget ? '' : ' — EXCEEDED'}.`,
  );
  return lines.join('\n');
}

/** History events per turn by event type, ours beside v01 (medians over waves of the medians over sampled agents). */
function eventsByType(r: Results): string[] {
  const ours = r.designs.ours?.eventsByType;
  const v01 = r.designs.v01?.eventsByType;
  if (!ours && !v01) return [];
  const types = [...new Set([...Object.keys(ours ?? {}), ...Object.keys(v01 ?? {})])];
  const most = (t: string) => Math.max(ours?.[t] ?? 0, v01?.[t] ?? 0);
  types.sort((a, b) => most(b) - most(a) || a.localeCompare(b));
  const cell = (m: Record<string, number> | undefined, t: string) => (m ? f(m[t] ?? 0, 2) : '—');
  return [
    '',
    'History events per turn by type (ours | v01):',
    '',
    '| event type | ours | v01 |',
    '|---|---|---|',
    ...types.map((t) => `| ${t} | ${cell(ours, t)} | ${cell(v01, t)} |`),
    `| all | ${f(r.designs.ours?.eventsPerTurn, 2)} | ${f(r.designs.v01?.eventsPerTurn, 2)} |`,
  ];
}

function priorities(r: Results): string[] {
  const p = r.priorities;
  if (!p) return [];
  const row = (name: string, run: PriorityRun) =>
    `| ${name} | ${run.p50.toFixed(1)} / ${run.p99.toFixed(1)} | ${run.n} | ${run.events} | ${run.events > 0 ? (run.floodMs / 1000).toFixed(1) : '—'} | ${run.events > 0 ? (run.drainedMs / 1000).toFixed(1) : '—'} | ${run.events > 0 ? (run.events / Math.max(1, run.backgroundCompletions)).toFixed(1) : '—'} | ${(run.userMs / 1000).toFixed(1)} |`;
  const rate = p.floodRate > 0 ? ` sent at ${p.floodRate}/s` : ' sent as fast as 20 senders go';
  return [
    '',
    `Priorities: one user thread, ${p.turns} turns (tools answering after ${p.toolDelayMs} ms), while ${p.events} subscription events${rate} flood ${p.threads} background threads on the same worker (${p.workflowSlots ?? 'default'} workflow task slots).`,
    '',
    '| run | user: tool result → next completion p50 / p99 (ms) | n | events | flood sent in (s) | background drained at (s) | events per background slice | user turns took (s) |',
    '|---|---|---|---|---|---|---|---|',
    row('alone', p.runs.alone),
    row('flood, without priorities (all key 3, one fairness key)', p.runs.without),
    row('flood, with priorities (user 2, background 4)', p.runs.with),
    row(`flood, with priorities, worker CPU target ${p.cpuTarget}`, p.runs.targets),
    '',
    `Under the flood with priorities, the user's p50 is **${p.floodWithOverIdleP50.toFixed(2)}×** its p50 alone; with the CPU target too, **${p.floodWithTargetsOverIdleP50.toFixed(2)}×** (goal ≤ 3).`,
  ];
}

function governed(r: Results): string[] {
  const g = r.governed;
  if (!g) return [];
  const row = (name: string, x: GovernedRun) =>
    `| ${name} | ${x.provider429s} | ${x.providerRequests} | ${x.completions} | ${(x.drainMs / 1000).toFixed(1)} | ${x.userP50Ms} (${x.userIdleP50Ms}) | ${x.tenantShareErrorMaxPct} % | ${x.budgetOvershootMaxTokens} | ${x.budgetedDoneBeforeRaise} → ${x.budgetedDoneAfterRaise} of ${x.budgetedThreads} |`;
  return [
    '',
    `Governed: ${g.threads} threads in ${g.tenants} tenants (fairness weights 1 and 2) woken at once against a provider allowing ${g.rpm} requests a minute and ${g.concurrency} at once (429 otherwise); one tenant's token budget covers half its threads until it is lifted.`,
    '',
    '| run | provider 429s | provider requests | completions | drained (s) | user p50 (idle p50) ms | tenant share error, max | budget overshoot (tokens) | budgeted tenant done: before → after the raise |',
    '|---|---|---|---|---|---|---|---|---|',
    ...(g.providers ?? [{ algorithm: 'sliding-window', off: g.off, on: g.on, allowedDrainMs: undefined }]).flatMap(
      (p) => [
        row(`${p.algorithm}, without limits`, p.off),
        row(
          `${p.algorithm}, with limits${p.allowedDrainMs === undefined ? '' : ` (the key allows ${(p.allowedDrainMs / 1000).toFixed(1)} s)`}`,
          p.on,
        ),
      ],
    ),
  ];
}

function density(r: Results): string[] {
  const d = r.density;
  if (!d) return [];
  const lines = [
    '',
    '| idle agents (parked on a tool) | total RSS (server + worker + driver) |',
    '|---|---|',
    ...d.points.map((p) => `| ${p.agents} | ${fmtBytes(p.total)} |`),
    '',
    `Memory per idle agent (slope): **${kib(d.slopeBytesPerAgent)}** (worker ${kib(d.workerSlopeBytesPerAgent)}, server ${kib(d.serverSlopeBytesPerAgent)}), ` +
      `intercept ${fmtBytes(d.interceptBytes)}, r² ${f(d.r2, 3)}. Projected agents in 8 GiB: **${count(d.projectedAgentsIn8GiB)}**.`,
    `Marginal (fit over the parked points only): **${kib(d.marginal.slopeBytesPerAgent)}** per idle agent across all processes, ` +
      `${kib(d.marginal.runtimeSlopeBytesPerAgent)} in the runtime's processes (server + worker, without the benchmark driver); ` +
      `projected agents in 8 GiB: **${count(d.marginal.projectedAgentsIn8GiB)}**.`,
    `Disk per agent: Temporal DB ${fmtBytes(d.diskBytesPerAgent.temporal)}, conversation store ${fmtBytes(d.diskBytesPerAgent.store)}. Parking rate ${f(d.agentsParkedPerSecond)} agents/s.`,
  ];
  const l = d.long;
  if (l) {
    const n = l.points.at(-1)?.agents ?? 0;
    lines.push(
      `Long conversations (${n.toLocaleString('en-US')} more agents in the same worker, parked on the tool call of turn ${l.historyTurns}; fit over their own points): ` +
        `per idle agent with 1-turn vs ${l.historyTurns}-turn histories, worker **${kib(d.workerSlopeBytesPerAgent)} vs ${kib(l.workerSlopeBytesPerAgent)}**, ` +
        `server **${kib(d.serverSlopeBytesPerAgent)} vs ${kib(l.serverSlopeBytesPerAgent)}**, all processes ${kib(d.slopeBytesPerAgent)} vs ${kib(l.slopeBytesPerAgent)}; ` +
        `disk per agent, Temporal DB ${fmtBytes(d.diskBytesPerAgent.temporal)} vs ${fmtBytes(l.diskBytesPerAgent.temporal)}, ` +
        `conversation store ${fmtBytes(d.diskBytesPerAgent.store)} vs ${fmtBytes(l.diskBytesPerAgent.store)}. Parking rate ${f(l.agentsParkedPerSecond)} agents/s.`,
    );
  }
  lines.push(
    `Woken sample: ${d.wake.exact}/${d.wake.sample} resumed with their exact history (result→completion p50 ${f(d.wake.latencyMs.p50)} ms, p99 ${f(d.wake.latencyMs.p99)} ms).`,
    // Older result files have no count.
    `Tool calls dispatched more than once: ${d.dispatchedAgain ?? 'not counted'}.`,
  );
  return lines;
}
