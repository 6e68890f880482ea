/** An eval report as Markdown (docs/evals.md, "Reading the report"): totals, one row per round, a diff per divergence. */
import { canonicalJson } from './compare';
import { DEFAULT_AGENT } from '../core/agents';
import type { EvalReport, RoundEval, SliceEval } from './evaluate';
import type { ToolChoice } from './recorded';

const cell = (s: string, max = 60): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  const short = flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  return short.replace(/\|/g, '\\|') || '—';
};
const decision = (d: { text: string; toolCall?: ToolChoice; error?: string }): string =>
  d.error !== undefined
    ? `error: ${d.error}`
    : d.toolCall
      ? `${d.toolCall.name} ${canonicalJson(d.toolCall.args)}`
      : `text: ${d.text}`;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const usd = (x: number | undefined) => (x === undefined ? 'unpriced' : `$${x.toFixed(4)}`);
const scoresCell = (r: RoundEval) => r.scores.map((s) => `${s.name}=${s.value}`).join(', ') || '—';
/** The agent that rebuilt a slice; `recorded → candidate` when the candidate agent is another. */
const agentCell = (s: SliceEval) => {
  const ran = s.agent.recorded?.name ?? DEFAULT_AGENT;
  return ran === s.agent.name ? s.agent.name : `${ran} → ${s.agent.name}`;
};

/**
 * The report as Markdown: a summary, a table of every evaluated round, each divergence's diff, the outcome scores.
 * @example writeFileSync('eval.md', evalMarkdown(await evaluateThreads(store, { threads, model })))
 */
export function evalMarkdown(report: EvalReport): string {
  const t = report.totals;
  // An agent column only where agents are in play: a slice of another agent than the default, or a candidate agent.
  const withAgents = report.threads.some((th) => th.slices.some((s) => agentCell(s) !== DEFAULT_AGENT));
  const lines = [
    `# Eval: ${report.model}${report.agent !== undefined ? ` as agent ${report.agent}` : ''}` +
      `${report.recordedModel ? ` against ${report.recordedModel}` : ''}`,
    '',
    `From slice ${report.fromSlice}, on divergence: ${report.onDivergence}. ` +
      `${t.threads} threads, ${t.recordedSlices} recorded slices, ${t.evaluatedSlices} evaluated ` +
      `(${t.evaluatedRounds} rounds, ${t.providerCalls} candidate calls, ${t.candidateErrors} failed).`,
    '',
    '| | |',
    '|---|---|',
    `| tool match | ${pct(t.toolMatchRate)} |`,
    `| mean text similarity | ${t.meanTextSimilarity.toFixed(3)} |`,
    `| diverged slices | ${t.divergedSlices} (${t.stoppedThreads} threads stopped) |`,
    `| tokens, recorded → candidate | ${t.recordedTokens} → ${t.candidateTokens} |`,
    `| cost, recorded → candidate | ${usd(t.recordedUsd)} → ${usd(t.candidateUsd)} |`,
    `| candidate latency, total | ${Math.round(t.candidateLatencyMs)} ms |`,
    ...Object.entries(t.scores).map(([name, s]) => `| score ${name} | mean ${s.mean.toFixed(3)} over ${s.count} |`),
    '',
    `| thread | slice | round |${withAgents ? ' agent |' : ''} recorded | candidate | tool | text sim | tokens | latency | scores |`,
    `|---|---|---|${withAgents ? '---|' : ''}---|---|---|---|---|---|---|`,
  ];
  for (const th of report.threads)
    for (const s of th.slices)
      for (const r of s.rounds)
        lines.push(
          `| ${cell(th.threadId, 30)} | ${s.slice} | ${r.round} |${withAgents ? ` ${cell(agentCell(s), 40)} |` : ''} ` +
            `${cell(decision(r.recorded))} | ` +
            `${cell(decision(r.candidate))} | ${r.toolMatch ? 'same' : '**differs**'} | ${r.textSimilarity.toFixed(2)} | ` +
            `${r.usage?.totalTokens ?? '—'} | ${Math.round(r.latencyMs)} ms | ${cell(scoresCell(r))} |`,
        );
  const diverging = report.threads.flatMap((th) =>
    th.slices.flatMap((s) => s.rounds.filter((r) => r.diff).map((r) => ({ th, s, r }))),
  );
  if (diverging.length > 0) lines.push('', '## Divergences');
  for (const { th, s, r } of diverging) {
    lines.push('', `### ${th.threadId}, slice ${s.slice}, round ${r.round} (${s.resolution ?? 'continued'})`, '');
    lines.push(
      '```diff',
      ...r.diff!.map((l) => (l.startsWith('  ') ? ` ${l.slice(2)}` : l.replace(/^([-+]) /, '$1'))),
      '```',
    );
  }
  if (report.changedAgents.length > 0) {
    lines.push(
      '',
      '## Changed agent definitions',
      '',
      'These slices ran a definition that has changed since (instructions, tools or models): they were rebuilt with it as it is now.',
      '',
      '| agent | recorded hash | hash now | slices |',
      '|---|---|---|---|',
    );
    for (const c of report.changedAgents)
      lines.push(
        `| ${cell(c.agent)} | ${cell(c.recorded)} | ${cell(c.now)} | ${c.slices.length}: ${cell(c.slices.join(', '), 120)} |`,
      );
  }
  const scored = report.threads.filter((th) => th.scores.length > 0);
  if (scored.length > 0) {
    lines.push('', '## Outcome scores', '', '| thread | slice | name | value | note |', '|---|---|---|---|---|');
    for (const th of scored)
      for (const sc of th.scores)
        lines.push(
          `| ${cell(th.threadId, 30)} | ${cell(sc.sliceId ?? 'thread')} | ${cell(sc.name)} | ${sc.value} | ${cell(sc.note ?? '')} |`,
        );
  }
  return `${lines.join('\n')}\n`;
}
