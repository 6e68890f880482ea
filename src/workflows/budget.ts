/**
 * The `budget` signal (issue 27 §1). A thread over budget (status `over_budget`) waits for it: the signal clears the
 * wait, so the loop retries the kept batch, whose slice checks the budgets again (and stops again if they are still
 * reached). With a scope and a budget it also queues that limit for the next slice to write to the store, so a plain
 * `temporal workflow signal` can raise a budget. A handler that issues no command: replay-safe, and a malformed
 * payload is ignored.
 */
import { setHandler } from '@temporalio/workflow';
import { latestPerScope, parseBudgetSignal } from '../core/budget';
import { budgetSignal, HANDLER_DOCS } from './definitions';
import type { ThreadState } from './state';

export function installBudgetSignal(st: ThreadState, changed: () => void): void {
  setHandler(
    budgetSignal,
    (payload: unknown) => {
      const parsed = parseBudgetSignal(payload);
      if ('error' in parsed) return;
      const { scope, budget } = parsed.ok;
      if (scope !== undefined && budget !== undefined) {
        // One pending update per scope past those the running slice took (`budgetSent`): a flood of signals stays
        // bounded (a slice's input, and the state carried through continue-as-new).
        const sent = st.budgetUpdates.slice(0, st.budgetSent);
        st.budgetUpdates = [...sent, ...latestPerScope([...st.budgetUpdates.slice(st.budgetSent), { scope, budget }])];
      }
      st.overBudget = undefined;
      changed();
    },
    { description: HANDLER_DOCS.budget },
  );
}
