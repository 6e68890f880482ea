/**
 * A thread's activities touch only the thread they run for (decision 83): the store's thread is the workflow id of the
 * activity's own execution, whatever its input says. The workflow already takes its thread id from Temporal; this is
 * the store's side of the same rule, so a workflow an older build runs with a forged input still cannot commit into
 * another thread.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';

/** `ApplicationFailure.type` of an activity asked to act on a thread other than its own workflow's. */
export const THREAD_MISMATCH = 'ThreadMismatch';

/** Throws (for good: no retry can mend it) unless `threadId` is the calling workflow's id. */
export function assertOwnThread(threadId: unknown): void {
  const own = Context.current().info.workflowExecution?.workflowId;
  if (threadId !== own) {
    throw ApplicationFailure.create({
      type: THREAD_MISMATCH,
      nonRetryable: true,
      message: `workflow ${own} may act only on its own thread, not on ${JSON.stringify(threadId)?.slice(0, 100)}`,
    });
  }
}

/** `fn` with {@link assertOwnThread} on the thread id its first argument names (`threadId`, or the argument itself). */
export function ownThreadOnly<A extends unknown[], R>(
  threadOf: (...args: A) => unknown,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args: A) => {
    assertOwnThread(threadOf(...args));
    return fn(...args);
  };
}
