/** The decisions of an experiment's runs per factor level, with counts and rates (issue 29 §2). */
import type { ExperimentResult, VariantResult } from './runner';

/** Per factor, per level: how many runs and how many ended with each decision. */
export interface DecisionTable {
  /** Every decision seen, sorted: the table's columns. */
  decisions: string[];
  factors: Record<
    'order' | 'timing' | 'count' | 'mode' | 'all',
    Record<string, { n: number; decisions: Record<string, number> }>
  >;
}

const levelOf = (r: VariantResult) => ({
  order: r.variant.order.join(' → '),
  timing: r.variant.timing,
  count: String(r.variant.count),
  mode: r.variant.mode,
  all: 'all',
});

export function tabulate(results: readonly VariantResult[]): DecisionTable {
  const table: DecisionTable = {
    decisions: [...new Set(results.map((r) => r.decision.label))].sort(),
    factors: { order: {}, timing: {}, count: {}, mode: {}, all: {} },
  };
  for (const r of results) {
    for (const [factor, level] of Object.entries(levelOf(r)) as [keyof DecisionTable['factors'], string][]) {
      const cell = (table.factors[factor][level] ??= { n: 0, decisions: {} });
      cell.n++;
      cell.decisions[r.decision.label] = (cell.decisions[r.decision.label] ?? 0) + 1;
    }
  }
  return table;
}

const escape = (s: string) => s.replace(/\|/g, '\\|');

/**
 * The table as Markdown: one section per factor, a row per level, a column per decision (count and rate).
 * @example console.log(experimentMarkdown(await runExperiment(client, exp), 'anthropic:claude-sonnet-4-5'))
 */
export function experimentMarkdown(result: ExperimentResult, model?: string): string {
  const { table } = result;
  const runs = result.variants.length;
  const lines = [
    `# Experiment ${result.experiment}${model ? `: ${model}` : ''}${result.agent !== undefined ? ` as agent ${result.agent}` : ''}`,
    '',
    `${runs / result.repeat} variants × ${result.repeat} repetitions = ${runs} runs, each a fork of ${result.baseThreadId}.`,
  ];
  for (const factor of ['all', 'timing', 'order', 'count', 'mode'] as const) {
    const levels = Object.entries(table.factors[factor]);
    if (factor !== 'all' && levels.length < 2) continue; // a factor with one level says nothing
    lines.push('', `## ${factor === 'all' ? 'All runs' : `By ${factor}`}`, '');
    lines.push(`| ${factor} | n | ${table.decisions.map(escape).join(' | ')} |`);
    lines.push(`|---|--:|${table.decisions.map(() => '--:').join('|')}|`);
    for (const [level, cell] of levels)
      lines.push(
        `| ${escape(level)} | ${cell.n} | ` +
          table.decisions
            .map((d) => {
              const k = cell.decisions[d] ?? 0;
              return `${k} (${Math.round((100 * k) / cell.n)}%)`;
            })
            .join(' | ') +
          ' |',
      );
  }
  const noted = result.variants.filter((v) => v.notes.length > 0);
  if (noted.length > 0) {
    lines.push('', '## Notes', '');
    for (const v of noted) lines.push(`- ${v.threadId}: ${v.notes.join('; ')}`);
  }
  return `${lines.join('\n')}\n`;
}
