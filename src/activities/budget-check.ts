/**
 * Budgets at the slice (issue 27 §1): before the model is called, the thread's, its tree's and its tenant's spend is
 * compared with their limits; a slice that would start over budget does not call the model and commits nothing. It
 * fails with the non-retryable `OverBudget` failure (details: the {@link BudgetExceeded}), the thread keeps its batch
 * and waits for a raise. After the completion, the commit bills the slice's usage to the same scopes, in its own
 * transaction (`CommitRequest.spend`). Overshoot: the slices that passed the check while the limit was crossed (at
 * most one per thread of the scope, since a thread runs one slice at a time).
 */
import { ApplicationFailure } from '@temporalio/activity';
import {
  type Budget,
  type BudgetState,
  type BudgetExceeded,
  type BudgetRef,
  type BudgetScope,
  budgetRefs,
  exceededText,
  firstExceeded,
  type SpendAmount,
} from '../core/budget';
import { type SliceInput, SLICE_REFUSED } from '../core/slice-protocol';
import type { ThreadEvent, TokenUsage } from '../core/types';
import { type PriceTable, priceOf, spendOf } from '../model/prices';
import type { ConversationStore } from '../store/conversation-store';

/**
 * Applies the limits the thread's `budget` signals asked for (a `temporal workflow signal` user has no store), then
 * checks. Returns the slice's scopes; throws `OverBudget` (after recording the thread as waiting) when one is reached.
 */
export async function checkBudget(
  store: ConversationStore,
  input: SliceInput,
  rootThreadId: string,
  emit: (e: ThreadEvent) => void,
  refused?: (scope: BudgetScope) => void,
  /** The thread's agent's default budget (issue 40): its limit where the thread has none of its own. */
  threadDefault?: Budget,
): Promise<BudgetRef[]> {
  const refs = budgetRefs(input.threadId, rootThreadId, input.tenant);
  for (const u of input.budgetUpdates ?? []) {
    const ref = refs.find((r) => r.scope === u.scope)!;
    await store.setBudget(ref, u.budget);
  }
  const states = async () => withDefault(await store.budgets(refs), threadDefault);
  if (!firstExceeded(await states())) return refs;
  await store.waitForBudget(input.threadId, refs);
  // Read again after recording the wait: a raise that came in between either sees this thread among the waiters (and
  // wakes it) or is seen here, so no raise is missed.
  const over = firstExceeded(await states());
  if (!over) return refs;
  emit({ threadId: input.threadId, type: 'budget_exceeded', ...over });
  // What a live view shows until the budget is raised (the workflow's status query says the same).
  emit({ threadId: input.threadId, type: 'status', status: 'over_budget' });
  refused?.(over.scope);
  throw overBudgetFailure(over);
}

/** The thread scope's limit: its own, else the agent's default. */
function withDefault(states: BudgetState[], threadDefault: Budget | undefined): BudgetState[] {
  if (!threadDefault) return states;
  return states.map((s) => (s.ref.scope === 'thread' && !s.limit ? { ...s, limit: threadDefault } : s));
}

export function overBudgetFailure(over: BudgetExceeded): ApplicationFailure {
  return ApplicationFailure.create({
    type: SLICE_REFUSED.overBudget,
    message: `over budget: ${exceededText(over)}`,
    nonRetryable: true,
    details: [over],
  });
}

/** What a slice of `modelId` with `usage` bills. */
export function sliceSpend(modelId: string, usage: TokenUsage | undefined, prices?: PriceTable): SpendAmount {
  return spendOf(usage, priceOf(modelId, prices));
}
