/**
 * The `infinity_budget_*` metrics (issue 27 §1) as the slice records them, on a meter that keeps what it is given (the
 * SDK's `MetricMeter` interface, which an embedding may implement to send metrics elsewhere).
 */
import type { MetricCounter, MetricMeter, MetricTags } from '@temporalio/common';
import { noopMetricMeter } from '@temporalio/common';
import { expect, it } from 'vitest';
import { sliceMetrics } from '../../src/activities/slice-metrics';
import { spendOf } from '../../src/model/prices';

function recordingMeter(): { meter: MetricMeter; added: [string, number, MetricTags | undefined][] } {
  const added: [string, number, MetricTags | undefined][] = [];
  const counter = (name: string): MetricCounter => ({
    name,
    kind: 'counter',
    valueType: 'int',
    add: (value, tags) => void added.push([name, value, tags]),
    withTags: () => counter(name),
  });
  const meter: MetricMeter = {
    createCounter: (name) => counter(name),
    createHistogram: (...a) => noopMetricMeter.createHistogram(...a),
    createGauge: (...a) => noopMetricMeter.createGauge(...a),
    withTags: () => meter,
  };
  return { meter, added };
}

it('counts refused slices by scope, and the cost and unpriced slices of committed ones', () => {
  const { meter, added } = recordingMeter();
  const m = sliceMetrics(meter);
  m.overBudget?.('tenant');
  m.overBudget?.('thread');
  m.billed?.(spendOf({ inputTokens: 1000, outputTokens: 100 }, { input: 2.5, output: 10 }));
  m.billed?.(spendOf({ inputTokens: 10, outputTokens: 10 }, undefined));
  expect(added).toEqual([
    ['infinity_budget_refused_total', 1, { scope: 'tenant' }],
    ['infinity_budget_refused_total', 1, { scope: 'thread' }],
    // 1000 × $2.50 + 100 × $10 per million: $0.0035, 3500 micro-dollars.
    ['infinity_budget_cost_microusd_total', 3500, undefined],
    ['infinity_budget_unpriced_slices_total', 1, undefined],
  ]);
});
