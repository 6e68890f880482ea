/**
 * How the thread runs one slice, and how a user text interrupts it.
 *
 * Release 0.2: a regular activity on the thread's task queue, cancelled when a user text arrives meanwhile.
 * Release 0.3 (decision 50): the first slice of a workflow task runs as a local activity, for at most a budget (most
 * completions end within it, and then a slice costs one marker event and no second workflow task); a slice still
 * streaming at the budget is adopted by a regular activity on the worker that runs it, where a user text can cancel it
 * as before. Any failure of that path falls back to release 0.2's activity, whose retries and timeouts are the server's.
 */
import {
  ActivityCancellationType,
  type ActivityOptions,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type {
  LocalSliceOutcome,
  RemoteSliceOutcome,
  SliceInput,
  SlicePeek,
  SliceRefusal,
  SliceResult,
} from '../core/slice-protocol';
import { decideRules } from './base-release';
import type { ThreadOptions } from './contract';

/**
 * `type`: the activity's failure type (`ApplicationFailure.type`), if it had one; `final`: no further attempt can mend
 * it (non-retryable).
 */
export type SliceOutcome =
  { ok: SliceResult } | { cancelled: true } | { failed: string; type?: string; final?: true; details?: unknown };

/** The activities as the workflow sees them (implemented in `src/activities/slice-entry.ts`). */
interface SliceActivities {
  runSlice(input: SliceInput): Promise<RemoteSliceOutcome>;
  adoptSlice(input: SliceInput, options: { interrupt?: boolean }): Promise<RemoteSliceOutcome>;
}
interface LocalSliceActivities {
  runSliceLocal(input: SliceInput, budgetMs: number): Promise<LocalSliceOutcome>;
  peekSlice(threadId: string, sliceId: string): Promise<SlicePeek>;
}

/** How long a slice runs as a local activity before a regular activity adopts it (decision 50). */
export const DEFAULT_LOCAL_SLICE_BUDGET_MS = 500;
/** A worker that does not pick up the adopting activity within this is taken for gone. */
const ADOPT_SCHEDULE_TO_START = '10s';

export interface SliceRunnerHooks {
  /** User texts that have arrived in this run: one arriving while a slice runs interrupts it. */
  userTexts(): number;
  /** Called when a user text interrupts the running slice. */
  interrupting(): void;
}

export interface SliceRunner {
  /** Whether local slices are on for this thread (`localSliceBudgetMs` > 0). */
  readonly localEnabled: boolean;
  /** Runs one slice; `local` (release 0.3, with `localEnabled`) takes the local path. */
  run(input: SliceInput, summary: string, local: boolean): Promise<SliceOutcome>;
  /**
   * Release 0.6 (decision 67): whether a slice committed already, and with which inputs; undefined when the store
   * could not say.
   */
  peek(threadId: string, sliceId: string): Promise<SlicePeek | undefined>;
}

/** Timeouts and retries of the `runSlice` activity: a slice may stream for long, but a dead worker is noticed fast. */
export function sliceActivityOptions(opts: ThreadOptions): ActivityOptions {
  return {
    startToCloseTimeout: opts.sliceTimeoutMs ?? 30 * 60_000,
    heartbeatTimeout: opts.sliceHeartbeatTimeoutMs ?? 4_000,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: opts.sliceMaxAttempts ?? 10,
      nonRetryableErrorTypes: ['CommitConflictError'],
    },
  };
}

export function sliceRunner(opts: ThreadOptions, hooks: SliceRunnerHooks): SliceRunner {
  const remote = sliceActivityOptions(opts);
  const nonRetryable = new Set(remote.retry?.nonRetryableErrorTypes ?? []);
  const { runSlice, adoptSlice } = proxyActivities<SliceActivities>(remote);
  const budgetMs = opts.localSliceBudgetMs ?? DEFAULT_LOCAL_SLICE_BUDGET_MS;
  const { runSliceLocal } = proxyLocalActivities<LocalSliceActivities>({
    // The budget bounds it on a worker with a hand-off queue; on one without, the slice runs to its end in here.
    startToCloseTimeout: remote.startToCloseTimeout,
    // One attempt: the fallback is the regular activity, with the server's retries and backoff.
    retry: { maximumAttempts: 1 },
  });

  /** Runs an activity that a user text arriving after `before` cancels (its slice commits what it streamed). */
  const interruptible = async (start: () => Promise<RemoteSliceOutcome>, before: number): Promise<SliceOutcome> => {
    const scope = new CancellationScope();
    let done = false;
    const promise = scope.run(start);
    void promise.then(
      () => (done = true),
      () => (done = true),
    );
    // A counter, not a scan of the inbox: conditions are evaluated after every signal, and a scan would make a flood
    // quadratic. Only texts that arrive while this slice runs interrupt it; older ones wait behind a retried slice.
    await condition(() => done || hooks.userTexts() > before);
    if (!done) {
      hooks.interrupting();
      scope.cancel();
    }
    try {
      const result = await promise;
      // A refusal answered as the result (0.13): read as its failure would be.
      return 'refused' in result ? refusedOutcome(result.refused) : { ok: result };
    } catch (e) {
      return failure(e, nonRetryable);
    }
  };

  // 0.13: a refusal comes back as the result (activity input only, no command: no patch).
  const remoteSlice = (input: SliceInput, summary: string) =>
    interruptible(
      () => runSlice.executeWithOptions({ summary }, [{ ...input, refusals: 'outcome' }]),
      hooks.userTexts(),
    );

  const maxAttempts = remote.retry?.maximumAttempts ?? 10;
  /**
   * The local path is the slice's first attempt. After it failed, release 0.2's activity makes the others (attempts
   * 2…N, so reported), unless the failure was one no attempt can mend.
   */
  const afterFirstAttempt = async (
    input: SliceInput,
    summary: string,
    outcome: SliceOutcome,
  ): Promise<SliceOutcome> => {
    if (!('failed' in outcome) || outcome.final || maxAttempts <= 1) return outcome;
    const retry = { ...remote.retry, maximumAttempts: maxAttempts - 1 };
    return await interruptible(
      () => runSlice.executeWithOptions({ ...remote, summary, retry }, [{ ...input, priorAttempts: 1 }]),
      hooks.userTexts(),
    );
  };

  /** Release 0.3's path: local first, adopted past the budget, release 0.2's activity when anything else happens. */
  const localSlice = async (input: SliceInput, summary: string): Promise<SliceOutcome> => {
    const before = hooks.userTexts();
    let first: LocalSliceOutcome;
    try {
      // A patch question after a local activity's result may not replay (decision 79): the rules come first.
      decideRules();
      first = await runSliceLocal.executeWithOptions({ summary }, [input, budgetMs]);
    } catch (e) {
      return await afterFirstAttempt(input, summary, failure(e, nonRetryable));
    }
    if ('done' in first) return { ok: first.done };
    // A refusal answered as the outcome (0.13): read as its failure would be, with no failed attempt behind it.
    if ('refused' in first) return refusedOutcome(first.refused);
    // A user text that arrived during the local part was held by the server until this workflow task: it interrupts.
    const interrupt = hooks.userTexts() > before;
    if (interrupt) hooks.interrupting();
    const options = {
      ...remote,
      summary,
      taskQueue: first.handoff.taskQueue,
      scheduleToStartTimeout: ADOPT_SCHEDULE_TO_START,
      retry: { maximumAttempts: 1 },
    };
    // Its failure — a timeout, the slice's own error, or the worker gone before it started — ends the first attempt.
    const adopted = await interruptible(
      () => adoptSlice.executeWithOptions(options, [input, { interrupt }]),
      hooks.userTexts(),
    );
    return await afterFirstAttempt(input, summary, adopted);
  };

  const { peekSlice } = proxyLocalActivities<LocalSliceActivities>({
    startToCloseTimeout: '10s',
    retry: { maximumAttempts: 3 },
  });
  const peek = async (threadId: string, sliceId: string): Promise<SlicePeek | undefined> => {
    try {
      decideRules(); // as before a local slice (decision 79)
      return await peekSlice.executeWithOptions({ summary: 'which inputs this slice took, if it committed' }, [
        threadId,
        sliceId,
      ]);
    } catch (e) {
      if (isCancellation(e)) throw e;
      return undefined;
    }
  };

  const localEnabled = budgetMs > 0;
  return {
    localEnabled,
    peek,
    run: (input, summary, local) =>
      local && localEnabled
        ? // 0.13: a refusal comes back as the outcome (activity input only, no command: no patch).
          localSlice({ ...input, local: true, refusals: 'outcome' }, summary)
        : remoteSlice(input, summary),
  };
}

/**
 * The activity's own failure: a regular activity's arrives as the cause of an `ActivityFailure`, a local activity's
 * as the `ApplicationFailure` itself.
 */
function applicationFailureOf(e: unknown): ApplicationFailure | undefined {
  if (e instanceof ApplicationFailure) return e;
  return e instanceof Error && e.cause instanceof ApplicationFailure ? e.cause : undefined;
}

function refusedOutcome(r: SliceRefusal): SliceOutcome {
  return {
    failed: String(r.message),
    ...(typeof r.type === 'string' && { type: r.type }),
    final: true,
    ...(r.details !== undefined && { details: r.details }),
  };
}

function failure(e: unknown, nonRetryable: ReadonlySet<string>): SliceOutcome {
  if (isCancellation(e)) return { cancelled: true };
  const app = applicationFailureOf(e);
  if (app) {
    const final = app.nonRetryable || nonRetryable.has(app.type ?? '');
    // The first detail only where there is one (an `OverBudget` failure's limit): other outcomes read as before.
    const details: unknown = app.details?.[0];
    return {
      failed: app.message,
      ...(app.type && { type: app.type }),
      ...(final && { final: true as const }),
      ...(details !== undefined && { details }),
    };
  }
  // A timeout or another failure of Temporal's: its message says what happened (release 0.2's reading).
  const cause = e instanceof Error ? e.cause : undefined;
  const type = cause instanceof Error && 'type' in cause && typeof cause.type === 'string' ? cause.type : undefined;
  const failed = e instanceof Error ? (cause instanceof Error ? cause.message : e.message) : String(e);
  return type ? { failed, type } : { failed };
}
