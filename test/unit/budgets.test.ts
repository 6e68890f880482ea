/** Budgets' pure rules and the price table (issue 27 §1): no server. */
import { describe, expect, it } from 'vitest';
import {
  latestPerScope,
  addSpend,
  budgetRefs,
  budgetViolation,
  exceededIn,
  firstExceeded,
  parseBudgetSignal,
  ZERO_SPEND,
} from '../../src/core/budget';
import { DEFAULT_PRICES, priceOf, spendOf } from '../../src/model/prices';

describe('budget rules', () => {
  it('a scope is over budget once its spend reaches a set limit, field by field', () => {
    const ref = { scope: 'tree' as const, key: 'r' };
    const spend = { ...ZERO_SPEND, inputTokens: 90, outputTokens: 10, totalTokens: 100, usd: 0.5, slices: 3 };
    expect(exceededIn({ ref, spend })).toBeUndefined();
    expect(exceededIn({ ref, limit: { totalTokens: 101 }, spend })).toBeUndefined();
    expect(exceededIn({ ref, limit: { totalTokens: 100 }, spend })).toEqual({
      scope: 'tree',
      key: 'r',
      field: 'totalTokens',
      limit: 100,
      spend: 100,
    });
    expect(exceededIn({ ref, limit: { outputTokens: 1000, usd: 0.5 }, spend })?.field).toBe('usd');
    expect(
      firstExceeded([
        { ref: { scope: 'thread', key: 't' }, limit: { inputTokens: 1000 }, spend },
        { ref, limit: { inputTokens: 50 }, spend },
      ])?.scope,
    ).toBe('tree');
  });

  it('the tenant defaults to the root thread id', () => {
    expect(budgetRefs('c', 'r', undefined)).toEqual([
      { scope: 'thread', key: 'c' },
      { scope: 'tree', key: 'r' },
      { scope: 'tenant', key: 'r' },
    ]);
    expect(budgetRefs('c', 'r', 'acme')[2]).toEqual({ scope: 'tenant', key: 'acme' });
  });

  it('adds spend per slice, counting unpriced ones', () => {
    const s = addSpend(addSpend(ZERO_SPEND, spendOf({ inputTokens: 5, outputTokens: 5 }, undefined)), {
      inputTokens: 1,
      outputTokens: 2,
      totalTokens: 3,
      usd: 0.1,
      unpriced: false,
    });
    expect(s).toEqual({ inputTokens: 6, outputTokens: 7, totalTokens: 13, usd: 0.1, slices: 2, unpricedSlices: 1 });
  });

  it('checks budgets and the budget signal payload', () => {
    expect(budgetViolation({ totalTokens: 10, usd: 0.5 })).toBeUndefined();
    expect(budgetViolation({ tokens: 10 })).toMatch(/unknown budget field 'tokens'/);
    expect(budgetViolation({ usd: -1 })).toMatch(/>= 0/);
    expect(budgetViolation({ usd: Number.NaN })).toMatch(/>= 0/);
    expect(budgetViolation([])).toMatch(/object/);
    expect(parseBudgetSignal(undefined)).toEqual({ ok: {} });
    expect(parseBudgetSignal({})).toEqual({ ok: {} });
    expect(parseBudgetSignal({ scope: 'tree', budget: { usd: 2 } })).toEqual({
      ok: { scope: 'tree', budget: { usd: 2 } },
    });
    expect(parseBudgetSignal({ scope: 'tenant', budget: null })).toEqual({ ok: { scope: 'tenant', budget: null } });
    expect(parseBudgetSignal({ scope: 'planet', budget: {} })).toHaveProperty('error');
    expect(parseBudgetSignal({ scope: 'thread' })).toHaveProperty('error');
    expect(parseBudgetSignal({ budget: { usd: 1 }, extra: 1 })).toHaveProperty('error');
    expect(parseBudgetSignal('raise')).toHaveProperty('error');
  });
});

describe('price table', () => {
  it('prices by exact id, else the longest prefix; a provider prefix is ignored; unknown models have none', () => {
    expect(priceOf('gpt-4o')).toBe(DEFAULT_PRICES['gpt-4o']);
    expect(priceOf('gpt-4o-2024-08-06')).toBe(DEFAULT_PRICES['gpt-4o']);
    expect(priceOf('gpt-4o-mini-2024-07-18')).toBe(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceOf('openai:gpt-4.1-mini')).toBe(DEFAULT_PRICES['gpt-4.1-mini']);
    expect(priceOf('anthropic:claude-sonnet-4-5-20250929')).toBe(DEFAULT_PRICES['claude-sonnet-4']);
    // The ids the AI SDK's providers give (`aiSdkModel`: `<provider>:<modelId>`).
    expect(priceOf('anthropic.messages:claude-sonnet-4-5')).toBe(DEFAULT_PRICES['claude-sonnet-4']);
    expect(priceOf('openai.chat:gpt-4.1-mini')).toBe(DEFAULT_PRICES['gpt-4.1-mini']);
    expect(priceOf('openai.responses:gpt-4o-2024-08-06')).toBe(DEFAULT_PRICES['gpt-4o']);
    expect(priceOf('amazon-bedrock:anthropic.claude-x-v1:0')).toBeUndefined();
    // A table keyed by the model's id as it is, prefix and all, prices it too.
    const own = { input: 1, output: 2 };
    expect(priceOf('anthropic.messages:claude-test', { 'anthropic.messages:claude-test': own })).toBe(own);
    expect(priceOf('o3-mini')).toBe(DEFAULT_PRICES['o3-mini']);
    expect(priceOf('o3')).toBe(DEFAULT_PRICES.o3);
    expect(priceOf('o30')).toBeUndefined();
    expect(priceOf('scripted')).toBeUndefined();
    expect(priceOf('llama-3')).toBeUndefined();
  });

  it('a worker table comes before the shipped one', () => {
    const mine = { 'gpt-4o': { input: 1, output: 1 }, scripted: { input: 1000, output: 2000 } };
    expect(priceOf('gpt-4o-2024-08-06', mine)).toEqual({ input: 1, output: 1 });
    expect(priceOf('scripted', mine)).toEqual({ input: 1000, output: 2000 });
    expect(priceOf('gpt-4.1', mine)).toBe(DEFAULT_PRICES['gpt-4.1']);
  });

  it('a slice costs its tokens times its prices; an unpriced one costs nothing and says so', () => {
    expect(spendOf({ inputTokens: 1_000_000, outputTokens: 500_000 }, { input: 3, output: 15 })).toEqual({
      inputTokens: 1_000_000,
      outputTokens: 500_000,
      totalTokens: 1_500_000,
      usd: 10.5,
      unpriced: false,
    });
    expect(spendOf({ inputTokens: 10, outputTokens: 10, totalTokens: 25 }, undefined)).toEqual({
      inputTokens: 10,
      outputTokens: 10,
      totalTokens: 25,
      usd: 0,
      unpriced: true,
    });
    expect(spendOf(undefined, DEFAULT_PRICES['gpt-4o'])).toMatchObject({ totalTokens: 0, usd: 0 });
  });
});

describe('budget updates a thread keeps', () => {
  it('keeps the latest per scope, in the order of their last arrival, however many signals came', () => {
    const flood = Array.from({ length: 10_000 }, (_, i) => ({
      scope: (['thread', 'tree', 'tenant'] as const)[i % 3]!,
      budget: { totalTokens: i },
    }));
    expect(latestPerScope(flood)).toEqual([
      { scope: 'tree', budget: { totalTokens: 9_997 } },
      { scope: 'tenant', budget: { totalTokens: 9_998 } },
      { scope: 'thread', budget: { totalTokens: 9_999 } },
    ]);
    expect(latestPerScope([{ scope: 'tree', budget: null }])).toEqual([{ scope: 'tree', budget: null }]);
  });
});
