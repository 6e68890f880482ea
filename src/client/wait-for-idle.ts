/**
 * Waiting until a thread is idle, with a deadline that holds. The wait is a Temporal update, and an update can end
 * without an answer for reasons that say nothing about the thread: the run continued-as-new (it abandons open waits,
 * and the next run answers), the server ended a long poll, or the thread's workflow task is failing for the moment (the
 * server refuses updates until a task attempt succeeds: a task that timed out on a loaded worker is retried). Those
 * are asked again until the deadline; at the deadline the call in flight is cancelled, not left running.
 */
import { type Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import type { ThreadStatus } from '../core/types';
import { waitForIdleUpdate } from '../workflows/definitions';
import { ThreadTimeoutError } from '../inbox/errors';
import { isUpdateLostWithTask, isWorkflowTaskFailing } from '../inbox/unavailable';

export interface WaitArgs {
  threadId: string;
  settled: boolean;
  timeoutMs: number;
  /** The thread's state once its workflow has ended (a closed thread is idle for good and takes no updates). */
  finalStatus(): Promise<ThreadStatus>;
}

export async function waitForIdle(temporal: Client, args: WaitArgs): Promise<ThreadStatus> {
  const handle = temporal.workflow.getHandle(args.threadId);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), args.timeoutMs);
  const timeout = () =>
    new ThreadTimeoutError(
      args.threadId,
      `${args.settled ? 'settling' : 'idling'}${failingTask ? ' (its workflow task kept failing; see `threads --stuck`)' : ''}`,
      args.timeoutMs,
    );
  const aborted = new Promise<never>((_, reject) =>
    abort.signal.addEventListener('abort', () => reject(timeout()), { once: true }),
  );
  aborted.catch(() => undefined);
  let failingTask = false;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const call = temporal.connection.withAbortSignal(abort.signal, async () => {
          const { status } = await handle.describe();
          if (status.name !== 'RUNNING') return await args.finalStatus();
          return await handle.executeUpdate(waitForIdleUpdate, { args: [{ settled: args.settled }] });
        });
        // The SDK polls an update's outcome in a loop of its own that the signal does not always end: race it.
        return await Promise.race([call, aborted]);
      } catch (e) {
        if (abort.signal.aborted) throw timeout();
        const taskFailing = isWorkflowTaskFailing(e) || isUpdateLostWithTask(e);
        failingTask ||= taskFailing;
        if (!(
          taskFailing ||
          e instanceof WorkflowUpdateFailedError ||
          e instanceof WorkflowUpdateRPCTimeoutOrCancelledError
        ))
          throw e;
        // Not a busy loop if the failure repeats; a failing task is retried by the server with its own backoff.
        await Promise.race([
          new Promise((r) => setTimeout(r, taskFailing ? Math.min(1_000, 100 * 2 ** attempt) : 50)),
          aborted.catch(() => undefined),
        ]);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}
