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

  it('spend by model: a commit adds each model its own spend under each scope once; a duplicate or conflicting commit adds nothing', async () => {
    const s = await make();
    const refs = [thread, tree, tenant];
    const commit = (sliceId: string, expectedLength: number, byModel: { model: string; amount: SpendAmount }[]) =>
      s.commit({
        threadId: 't',
        sliceId,
        expectedLength,
        items: [user(`${sliceId}-m`, sliceId)],
        result: result(sliceId, expectedLength + 1),
        spend: { refs, amount: amount(0, 0, 0), byModel },
      });
    expect(await s.spendByModel(tree)).toEqual([]);
    // A routed slice: rounds on two models, each priced with its own prices (here the second has none).
    expect(
      await commit('s1', 0, [
        { model: 'p:model-b', amount: amount(100, 20, 0.25) },
        { model: 'p:model-a', amount: amount(10, 2, 0, true) },
      ]),
    ).toBe('committed');
    expect(await commit('s1', 0, [{ model: 'p:model-a', amount: amount(1000, 1000, 1) }])).toBe('duplicate');
    await expect(commit('s9', 0, [{ model: 'p:model-a', amount: amount(5, 5, 1) }])).rejects.toBeInstanceOf(
      CommitConflictError,
    );
    // A model named twice in one commit is one slice of that model.
    expect(
      await commit('s2', 1, [
        { model: 'p:model-b', amount: amount(1, 1, 0.5) },
        { model: 'p:model-b', amount: amount(2, 2, 0.25) },
      ]),
    ).toBe('committed');
    // A commit without byModel (an older worker's) adds to the scopes' spend only.
    await s.commit({
      threadId: 't',
      sliceId: 's3',
      expectedLength: 2,
      items: [],
      result: result('s3', 2),
      spend: { refs, amount: amount(50, 50, 0) },
    });
    const expected = [
      {
        model: 'p:model-a',
        inputTokens: 10,
        outputTokens: 2,
        totalTokens: 12,
        usd: 0,
        slices: 1,
        unpricedSlices: 1,
      },
      {
        model: 'p:model-b',
        inputTokens: 103,
        outputTokens: 23,
        totalTokens: 126,
        usd: expect.closeTo(1, 10) as number,
        slices: 2,
        unpricedSlices: 0,
      },
    ];
    for (const ref of refs) expect(await s.spendByModel(ref)).toEqual(expected);
    // Another thread of the tree adds to the tree and the tenant per model, not to this thread.
    await s.commit({
      threadId: 'child',
      sliceId: 'c1',
      expectedLength: 0,
      items: [],
      result: result('c1', 0),
      spend: {
        refs: [{ scope: 'thread', key: 'child' }, tree, tenant],
        amount: amount(3, 4, 0.5),
        byModel: [{ model: 'o:model-c', amount: amount(3, 4, 0.5) }],
      },
    });
    expect((await s.spendByModel(thread)).map((m) => m.model)).toEqual(['p:model-a', 'p:model-b']);
    expect((await s.spendByModel(tree)).map((m) => [m.model, m.totalTokens, m.slices])).toEqual([
      ['o:model-c', 7, 1],
      ['p:model-a', 12, 1],
      ['p:model-b', 126, 2],
    ]);
    expect(await s.spendByModel({ scope: 'thread', key: 'child' })).toEqual([
      { model: 'o:model-c', inputTokens: 3, outputTokens: 4, totalTokens: 7, usd: 0.5, slices: 1, unpricedSlices: 0 },
    ]);
    // Scopes and keys are apart: the tenant 't' is not the thread 't'.
    expect(await s.spendByModel({ scope: 'tenant', key: 't' })).toEqual([]);
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
