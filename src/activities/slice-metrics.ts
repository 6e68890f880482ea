/**
 * What the slice activities count: attempts started, committed (with their duration, tokens and tool calls) and
 * failed, events and reports appended, compactions applied. Recorded on the Temporal SDK runtime's meter (a no-op
 * unless the runtime exports metrics), once per attempt: a local slice adopted past its budget is one attempt.
 */
import type { MetricMeter } from '@temporalio/common';
import type { BudgetScope, SpendAmount } from '../core/budget';
import { METRICS } from '../core/metric-names';
import type { SliceResult } from '../core/slice-protocol';
import type { StoredItem, ThreadKind } from '../core/types';

/** How a committed tool call was carried out. */
export type ToolCallKind = 'async' | 'sync' | 'builtin' | 'unknown';

export interface SliceMetrics {
  /** An attempt of a slice starts. */
  started(kind: ThreadKind): void;
  /** It committed `items` after `ms`; `classify` says how each committed tool call ran. */
  committed(
    kind: ThreadKind,
    ms: number,
    result: SliceResult,
    items: readonly StoredItem[],
    classify: (name: string) => ToolCallKind,
  ): void;
  /** It failed (an attempt abandoned or cancelled counts too: its work is lost). */
  failed(kind: ThreadKind, error: unknown): void;
  compactionApplied(): void;
  /** A slice did not start: `scope`'s budget is reached. */
  overBudget?(scope: BudgetScope): void;
  /** A committed slice billed `amount` to its budgets. */
  billed?(amount: SpendAmount): void;
}

/** The failure type of an activity error (`ApplicationFailure.type`), else the error's name. */
const errorType = (e: unknown): string => {
  if (!(e instanceof Error)) return 'unknown';
  const type = (e as { type?: unknown }).type;
  return typeof type === 'string' && type !== '' ? type : e.name;
};

export function sliceMetrics(meter: MetricMeter): SliceMetrics {
  const started = meter.createCounter(METRICS.slicesStarted.name, undefined, METRICS.slicesStarted.help);
  const committed = meter.createCounter(METRICS.slicesCommitted.name, undefined, METRICS.slicesCommitted.help);
  const failed = meter.createCounter(METRICS.slicesFailed.name, undefined, METRICS.slicesFailed.help);
  const duration = meter.createHistogram(METRICS.sliceDuration.name, 'int', 'ms', METRICS.sliceDuration.help);
  const tokens = meter.createCounter(METRICS.tokens.name, undefined, METRICS.tokens.help);
  const toolCalls = meter.createCounter(METRICS.toolCalls.name, undefined, METRICS.toolCalls.help);
  const appended = meter.createCounter(METRICS.historyEvents.name, undefined, METRICS.historyEvents.help);
  const compactions = meter.createCounter(METRICS.compactions.name, undefined, METRICS.compactions.help);
  const refused = meter.createCounter(METRICS.budgetRefused.name, undefined, METRICS.budgetRefused.help);
  const cost = meter.createCounter(METRICS.budgetCost.name, 'microusd', METRICS.budgetCost.help);
  const unpriced = meter.createCounter(METRICS.budgetUnpriced.name, undefined, METRICS.budgetUnpriced.help);
  return {
    started: (kind) => started.add(1, { kind }),
    committed(kind, ms, result, items, classify) {
      committed.add(1, { kind });
      duration.record(Math.round(ms), { kind });
      if (result.usage?.inputTokens) tokens.add(result.usage.inputTokens, { direction: 'in' });
      if (result.usage?.outputTokens) tokens.add(result.usage.outputTokens, { direction: 'out' });
      for (const { item } of items) {
        if (item.kind === 'tool_call') toolCalls.add(1, { kind: classify(item.name) });
        else if (item.kind === 'subscription_event') appended.add(1, { kind: item.childThreadId ? 'report' : 'event' });
      }
    },
    failed: (kind, e) => failed.add(1, { kind, error: errorType(e) }),
    compactionApplied: () => compactions.add(1),
    overBudget: (scope) => refused.add(1, { scope }),
    billed(amount) {
      // Counters take whole numbers: micro-dollars, rounded per slice.
      const micro = Math.round(amount.usd * 1_000_000);
      if (micro > 0) cost.add(micro);
      if (amount.unpriced) unpriced.add(1);
    },
  };
}
