/**
 * The budget ledger's part of the store contract (issue 27 §1), run by `storeContract` for every store: limits per
 * (scope, key), spend added only by a commit that counts (a duplicate commit of a retried slice adds nothing, a
 * conflicting one nothing either), threads waiting for budget, forgotten by their next commit.
 */
import { expect, it } from 'vitest';
import type { BudgetRef, SpendAmount } from '../src/core/budget';
import { CommitConflictError, type ConversationStore } from '../src/store/conversation-store';
import { result, user } from './store-contract';

const thread: BudgetRef = { scope: 'thread', key: 't' };
const tree: BudgetRef = { scope: 'tree', key: 'root' };
const tenant: BudgetRef = { scope: 'tenant', key: 'acme' };
const amount = (inputTokens: number, outputTokens: number, usd: number, unpriced = false): SpendAmount => ({
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
  usd,
  unpriced,
});
const zero = { inputTokens: 0, outputTokens: 0, totalTokens: 0, usd: 0, slices: 0, unpricedSlices: 0 };

export function budgetLedgerContract(make: () => Promise<ConversationStore>): void {
  it('budgets: limits per scope and key, set, replaced and removed; unknown scopes have no limit and zero spend', async () => {
    const s = await make();
    expect(await s.budgets([thread, tree])).toEqual([
      { ref: thread, spend: zero },
      { ref: tree, spend: zero },
    ]);
    await s.setBudget(thread, { totalTokens: 100 });
    await s.setBudget(tree, { usd: 1.5, inputTokens: 10 });
    await s.setBudget({ scope: 'tenant', key: 't' }, { outputTokens: 3 });
    await s.setBudget(thread, { totalTokens: 200 });
    expect(await s.budgets([tree, thread, { scope: 'tenant', key: 't' }])).toEqual([
      { ref: tree, limit: { usd: 1.5, inputTokens: 10 }, spend: zero },
      { ref: thread, limit: { totalTokens: 200 }, spend: zero },
      { ref: { scope: 'tenant', key: 't' }, limit: { outputTokens: 3 }, spend: zero },
    ]);
    await s.setBudget(thread, null);
    expect(await s.budgets([thread])).toEqual([{ ref: thread, spend: zero }]);
  });

  it('budgets: a commit adds its spend to each scope once; a duplicate or conflicting commit adds nothing', async () => {
    const s = await make();
    const refs = [thread, tree, tenant];
    const commit = (sliceId: string, expectedLength: number, a: SpendAmount) =>
      s.commit({
        threadId: 't',
        sliceId,
        expectedLength,
        items: [user(`${sliceId}-m`, sliceId)],
        result: result(sliceId, expectedLength + 1),
        spend: { refs, amount: a },
      });
    expect(await commit('s1', 0, amount(100, 20, 0.25))).toBe('committed');
    // The retried slice: same id, billed once.
    expect(await commit('s1', 0, amount(100, 20, 0.25))).toBe('duplicate');
    await expect(commit('s9', 0, amount(5, 5, 1))).rejects.toBeInstanceOf(CommitConflictError);
    expect(await commit('s2', 1, amount(7, 3, 0, true))).toBe('committed');
    const [t, r, n] = await s.budgets(refs);
    const expected = {
      inputTokens: 107,
      outputTokens: 23,
      totalTokens: 130,
      usd: 0.25,
      slices: 2,
      unpricedSlices: 1,
    };
    expect(t!.spend).toEqual(expected);
    expect(r!.spend).toEqual(expected);
    expect(n!.spend).toEqual(expected);
    // Another thread of the same tree adds to the tree and the tenant, not to this thread.
    await s.commit({
      threadId: 'child',
      sliceId: 'c1',
      expectedLength: 0,
      items: [],
      result: result('c1', 0),
      spend: { refs: [{ scope: 'thread', key: 'child' }, tree, tenant], amount: amount(1, 1, 0.5) },
    });
    const after = await s.budgets(refs);
    expect(after.map((b) => b.spend.totalTokens)).toEqual([130, 132, 132]);
    expect(after[1]!.spend.usd).toBeCloseTo(0.75, 10);
    expect(after[1]!.spend.slices).toBe(3);
  });

  it('budgets: threads waiting for budget are found by each of their scopes and forgotten by their next commit', async () => {
    const s = await make();
    await s.waitForBudget('t', [thread, tree, tenant]);
    await s.waitForBudget('t', [thread, tree, tenant]);
    await s.waitForBudget('u', [{ scope: 'thread', key: 'u' }, tree, { scope: 'tenant', key: 'other' }]);
    expect(await s.budgetWaiters(tree)).toEqual(['t', 'u']);
    expect(await s.budgetWaiters(tenant)).toEqual(['t']);
    expect(await s.budgetWaiters(thread)).toEqual(['t']);
    expect(await s.budgetWaiters({ scope: 'tenant', key: 'none' })).toEqual([]);
    await s.commit({
      threadId: 't',
      sliceId: 's1',
      expectedLength: 0,
      items: [],
      result: result('s1', 0),
      spend: { refs: [thread, tree, tenant], amount: amount(1, 1, 0) },
    });
    expect(await s.budgetWaiters(tree)).toEqual(['u']);
    expect(await s.budgetWaiters(thread)).toEqual([]);
  });
}
