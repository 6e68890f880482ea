/**
 * Budgets from the client side (issue 27 §1): set a scope's limits in the conversation store and wake the threads
 * that wait over budget under it (their `budget` signal makes them check again); read limits and spend.
 */
import type { Client } from '@temporalio/client';
import { type Budget, type BudgetRef, type BudgetState, budgetViolation } from '../core/budget';
import { InvalidInputError } from '../inbox/errors';
import type { ConversationStore } from '../store/conversation-store';
import { budgetSignal } from '../workflows/definitions';

/** A budget's scope and key: a thread, an agent tree (by its root thread id) or a tenant. */
export type BudgetTarget = { thread: string } | { tree: string } | { tenant: string };

export function refOf(target: BudgetTarget): BudgetRef {
  if ('thread' in target) return { scope: 'thread', key: target.thread };
  if ('tree' in target) return { scope: 'tree', key: target.tree };
  return { scope: 'tenant', key: target.tenant };
}

/** What {@link setBudget} did: the scope, and the threads it woke (those waiting over budget under it). */
export interface SetBudgetResult {
  ref: BudgetRef;
  woken: string[];
}

/**
 * Sets (`null`: removes) the limits of `target` and wakes its waiting threads; each checks again at once and resumes
 * if no budget of its own is reached any more. A thread that no longer runs is skipped.
 */
export async function setBudget(
  temporal: Client,
  store: ConversationStore,
  target: BudgetTarget,
  budget: Budget | null,
): Promise<SetBudgetResult> {
  const bad = budget === null ? undefined : budgetViolation(budget);
  if (bad) throw new InvalidInputError(bad);
  const ref = refOf(target);
  await store.setBudget(ref, budget);
  // After the write: a slice that records its wait after this read sees the new limit itself (budget-check.ts).
  const waiting = await store.budgetWaiters(ref);
  const woken: string[] = [];
  for (const threadId of waiting) {
    try {
      await temporal.workflow.getHandle(threadId).signal(budgetSignal, {});
      woken.push(threadId);
    } catch {
      // Closed or gone: nothing to wake.
    }
  }
  return { ref, woken };
}

/** Limits (if set) and spend of `targets`, in order; `byModel`: each with its spend per model too (sorted by model). */
export async function budgetStates(
  store: ConversationStore,
  targets: readonly BudgetTarget[],
  options: { byModel?: boolean } = {},
): Promise<BudgetState[]> {
  const states = await store.budgets(targets.map(refOf));
  if (!options.byModel) return states;
  return Promise.all(states.map(async (s) => ({ ...s, byModel: await store.spendByModel(s.ref) })));
}
