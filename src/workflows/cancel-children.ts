/**
 * Release 0.10 (decision 76): a thread ended by Temporal's own cancel takes the children it spawned with it, and each
 * of them does the same with theirs, so a cancelled tree stops spending. Before, children were left running
 * (`ParentClosePolicy.ABANDON`, which continue-as-new needs), and their reports went nowhere.
 */
import { CancellationScope, getExternalWorkflowHandle } from '@temporalio/workflow';
import { v010 } from './patches';
import { CHILDREN_WINDOW, type ThreadState } from './state';

/**
 * Asks the children this thread spawned to cancel, as the thread ends cancelled, and waits for the server to take each
 * request: a thread that closed with them outstanding would have them dropped. A child that closed already answers
 * with a failure nobody needs. No command for a thread without children. At most the most recent
 * {@link CHILDREN_WINDOW}, as a run carries them: the server fails a workflow task that leaves more than 2,000
 * cancel requests pending, again at every retry, so a thread handed more (a start made by hand) never closed.
 */
export async function cancelChildren(st: ThreadState): Promise<void> {
  if (st.children.size === 0) return;
  v010();
  const children = [...st.children.keys()].slice(-CHILDREN_WINDOW);
  // Outside the cancelled scope, so the requests are made.
  await CancellationScope.nonCancellable(() =>
    Promise.allSettled(children.map((child) => getExternalWorkflowHandle(child).cancel())),
  );
}
