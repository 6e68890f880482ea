/**
 * The slice's three activity entry points (decision 50):
 * - `runSliceLocal`, a local activity: runs the slice inside the workflow task, for at most a budget. Most slices end
 *   within it, and cost one marker event instead of an activity's three events and a second workflow task. One that
 *   streams longer is handed off: it keeps running here, and the local activity returns this worker's own task queue.
 * - `adoptSlice`, a regular activity on that queue: takes over the running job, so the thread can interrupt it (a
 *   regular activity hears cancellation through its heartbeat; a local one cannot hear signals at all).
 * - `runSlice`, a regular activity on the thread's task queue: release 0.2's only path, and since 0.3 the fallback
 *   when the local path fails or the adopting worker is gone.
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import {
  type LocalSliceOutcome,
  type RemoteSliceOutcome,
  type SliceInput,
  type SliceRefusal,
  type SliceResult,
  SLICE_REFUSED,
} from '../core/slice-protocol';
import type { ThreadEvent } from '../core/types';
import { assertOwnThread } from './own-thread';
import { type SliceControl, SliceJobs } from './slice-jobs';

type RunSlice = (input: SliceInput, control: SliceControl) => Promise<SliceResult>;

export interface SliceEntryOptions {
  jobs: SliceJobs;
  /** This worker's own task queue; without it a local slice runs to its end inside the local activity. */
  handoffQueue?: string;
  /** @default 1000 */
  heartbeatIntervalMs?: number;
}

export function sliceEntryPoints(run: RunSlice, emit: (e: ThreadEvent) => void, opts: SliceEntryOptions) {
  /** Every failed attempt is told to live listeners; the thread itself records the last one (status().lastError). */
  const reported = async <T>(input: SliceInput, body: () => Promise<T>): Promise<T> => {
    try {
      return await body();
    } catch (e) {
      const attempt = Context.current().info.attempt + (input.priorAttempts ?? 0);
      // A slice refused for budget or waiting for provider capacity is no failure of the slice: the thread shows
      // over_budget and a budget_exceeded event, or waits on a timer.
      const refused =
        e instanceof ApplicationFailure && (e.type === SLICE_REFUSED.overBudget || e.type === SLICE_REFUSED.throttled);
      if (!(e instanceof CancelledFailure) && !refused) {
        emit({
          threadId: input.threadId,
          type: 'info',
          text: `Error: slice ${input.sliceId} failed (attempt ${attempt}): ${e instanceof Error ? e.message : String(e)}`,
        });
      }
      throw e;
    }
  };

  /** No heartbeat at the start: most slices finish well within the interval, and each heartbeat is a server call. */
  const heartbeating = async <T>(body: Promise<T>): Promise<T> => {
    const ctx = Context.current();
    const timer = setInterval(() => ctx.heartbeat(), opts.heartbeatIntervalMs ?? 1000);
    try {
      return await body;
    } finally {
      clearInterval(timer);
    }
  };

  /** A refusal as the result when the workflow asks for it (0.13), else the failure as before. */
  const asOutcome = async (input: SliceInput, body: () => Promise<SliceResult>): Promise<RemoteSliceOutcome> => {
    try {
      return await body();
    } catch (e) {
      const refusal = input.refusals === 'outcome' ? refusalOf(e) : undefined;
      if (refusal) return { refused: refusal };
      throw e;
    }
  };

  async function runSlice(input: SliceInput): Promise<RemoteSliceOutcome> {
    // Each entry point, before anything runs or is told to listeners: a slice acts only on its own workflow's thread.
    assertOwnThread(input.threadId);
    const ctx = Context.current();
    // Only the workflow's own cancel is an interrupt; a timeout, shutdown, pause or reset abandons the attempt.
    const control: SliceControl = {
      signal: ctx.cancellationSignal,
      interruptRequested: () => ctx.cancellationDetails?.cancelRequested === true,
    };
    return await asOutcome(input, () => reported(input, () => heartbeating(run(input, control))));
  }

  async function runSliceLocal(input: SliceInput, budgetMs: number): Promise<LocalSliceOutcome> {
    assertOwnThread(input.threadId);
    const ctx = Context.current();
    const job = opts.jobs.start(SliceJobs.key(input.threadId, input.sliceId), (control) => run(input, control));
    // The workflow task ended under us (eviction, worker shutdown): nobody will read this attempt's result.
    const abandon = () => job.abort('abandon', 'the local slice was cancelled (its workflow task ended)');
    ctx.cancellationSignal.addEventListener('abort', abandon, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const budget =
      opts.handoffQueue === undefined
        ? []
        : [
            new Promise<'budget'>(
              // A job already committing finishes here: only one that has not begun to commit is handed off.
              (resolve) => (timer = setTimeout(() => job.tryHandOff() && resolve('budget'), budgetMs)),
            ),
          ];
    const local = async (): Promise<LocalSliceOutcome> => {
      const first = await Promise.race([job.promise, ...budget]);
      if (first !== 'budget') return { done: first };
      ctx.cancellationSignal.removeEventListener('abort', abandon);
      opts.jobs.park(job);
      return { handoff: { taskQueue: opts.handoffQueue! } };
    };
    try {
      // The slice's first attempt: its failure is reported like any attempt's.
      return await reported(input, local);
    } catch (e) {
      // A refusal is no failed attempt: a workflow that can read it as the outcome gets it so (0.13).
      const refusal = input.refusals === 'outcome' ? refusalOf(e) : undefined;
      if (refusal) return { refused: refusal };
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  async function adoptSlice(input: SliceInput, options: { interrupt?: boolean } = {}): Promise<RemoteSliceOutcome> {
    assertOwnThread(input.threadId);
    const ctx = Context.current();
    const key = SliceJobs.key(input.threadId, input.sliceId);
    // Not parked (expired, or already adopted by an earlier attempt): run it afresh; the commit is idempotent.
    const job = opts.jobs.adopt(key) ?? opts.jobs.start(key, (control) => run(input, control));
    const stop = () => {
      const reason =
        ctx.cancellationSignal.reason instanceof Error
          ? ctx.cancellationSignal.reason.message
          : String(ctx.cancellationSignal.reason);
      job.abort(ctx.cancellationDetails?.cancelRequested === true ? 'interrupt' : 'abandon', reason);
    };
    if (ctx.cancellationSignal.aborted) stop();
    else ctx.cancellationSignal.addEventListener('abort', stop, { once: true });
    // A user text had already arrived when the workflow saw the hand-off: interrupt at once.
    if (options.interrupt) job.abort('interrupt', 'a user text arrived while the slice streamed');
    return await asOutcome(input, () => reported(input, () => heartbeating(job.promise)));
  }

  return { runSlice, runSliceLocal, adoptSlice };
}

const REFUSALS: ReadonlySet<string> = new Set(Object.values(SLICE_REFUSED));

/** The refusal a slice's failure stands for (a non-retryable {@link SLICE_REFUSED} type), if it is one. */
function refusalOf(e: unknown): SliceRefusal | undefined {
  if (!(e instanceof ApplicationFailure) || !e.nonRetryable || !REFUSALS.has(e.type ?? '')) return undefined;
  const details: unknown = e.details?.[0];
  return {
    type: e.type as SliceRefusal['type'],
    message: e.message,
    ...(details !== undefined && { details }),
  };
}
