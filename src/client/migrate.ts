/**
 * Moving parked threads onto the release their workers now run (issue 39, decision 84, docs/upgrading.md "Moving
 * threads forward"). A thread's current run replays with the rules of the release that started it, and a release
 * keeps the rules of a window of releases only; `migrateThreads` asks every running thread whose run started before a
 * cutoff to continue as new (a `migrate` input, taken at the signal, never queued), so its next run starts on the
 * current release with all its state. Bounded (`concurrency`, `limit`), reported as it goes (`onProgress`), and
 * resumable: run again with the same `before`, and the threads already moved (their runs started after it) are not
 * listed again. Safe while threads work: a thread in a slice moves at its next pause between slices.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { migrateInput } from '../core/inputs';
import { InvalidInputError } from '../inbox/errors';
import { inputSignal, THREAD_WORKFLOW_TYPE } from '../workflows/definitions';
import { describeProblem, workflowTaskProblem } from './stuck';

/** Options of {@link migrateThreads}. */
export interface MigrateOptions {
  /**
   * Move the threads whose current run started before this instant. Give the same value to resume a sweep that
   * stopped (the report says which it used).
   * @default when the sweep starts
   */
  before?: Date;
  /**
   * Only these threads (their workflow ids), if they are running on a run started before `before`.
   * @default every thread of the task queue
   */
  threadIds?: readonly string[];
  /**
   * Threads moving at once: each is one signal and one long poll on its run.
   * @default 32
   */
  concurrency?: number;
  /**
   * How long one thread may take to move: a thread in a long slice moves only when it ends. Past it the thread is
   * reported `not_moved` with what Temporal says about it, and the sweep goes on.
   * @default 120000
   */
  timeoutMs?: number;
  /**
   * Move at most this many threads, then stop (a bounded batch; run again with the same `before` to go on).
   * @default no limit
   */
  limit?: number;
  /**
   * Only list the threads that would move: none is signalled.
   * @default false
   */
  dryRun?: boolean;
  /** Called after each thread with the totals so far. */
  onProgress?: (progress: MigrateProgress) => void;
  /** Stops the sweep: threads already signalled are still awaited (up to `timeoutMs`). */
  signal?: AbortSignal;
}

/** Totals so far. */
export interface MigrateProgress {
  /** Threads listed so far. */
  found: number;
  /** Moved onto a new run. */
  moved: number;
  /** Closed before or while the sweep asked (nothing to move). */
  closed: number;
  /** Not moved: see {@link MigrateReport.notMoved}. */
  notMoved: number;
  elapsedMs: number;
}

/** What became of one thread. */
export interface MigratedThread {
  threadId: string;
  /** The run the sweep found. */
  runId: string;
  outcome: 'moved' | 'closed' | 'not_moved' | 'listed';
  /** The run it continued into (`moved`). */
  newRunId?: string;
  /** Why not (`not_moved`), e.g. a workflow task that keeps failing on this release, or a slice still running. */
  reason?: string;
}

/** The result of {@link migrateThreads}. */
export interface MigrateReport extends MigrateProgress {
  /** The cutoff used (ISO 8601): pass it as `before` to resume. */
  before: string;
  /** Every thread listed, moved or not moved matter most; `listed` only for a dry run. */
  threads: MigratedThread[];
  /** Whether every thread found was handled (false: stopped by `limit` or `signal`, or some were not moved). */
  complete: boolean;
}

/**
 * The visibility query of the running threads of `taskQueue` whose run started before `before` (only `threadIds`, if
 * given).
 */
export function migrationQuery(taskQueue: string, before: Date, threadIds?: readonly string[]): string {
  const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return [
    `WorkflowType = ${quote(THREAD_WORKFLOW_TYPE)}`,
    `TaskQueue = ${quote(taskQueue)}`,
    `ExecutionStatus = 'Running'`,
    `StartTime < ${quote(before.toISOString())}`,
    ...(threadIds ? [`WorkflowId IN (${threadIds.map(quote).join(', ')})`] : []),
  ].join(' AND ');
}

/**
 * Moves the running threads of `taskQueue` whose current run started before `options.before` onto new runs, on the
 * release the task queue's workers now run. Run it once every worker runs the new release.
 *
 * @example
 * ```ts
 * const report = await client.migrateThreads({ onProgress: (p) => console.log(p.moved, 'moved') });
 * if (!report.complete) console.log(`resume with before: ${report.before}`, report.threads.filter((t) => t.reason));
 * ```
 */
export async function migrateThreads(
  temporal: Client,
  taskQueue: string,
  options: MigrateOptions = {},
): Promise<MigrateReport> {
  const before = options.before ?? new Date();
  if (Number.isNaN(before.getTime())) throw new InvalidInputError('before must be a valid date');
  const concurrency = positive(options.concurrency ?? 32, 'concurrency');
  const timeoutMs = positive(options.timeoutMs ?? 120_000, 'timeoutMs');
  const limit = options.limit === undefined ? Infinity : positive(options.limit, 'limit');
  const ids = options.threadIds;
  if (ids && (ids.length === 0 || ids.length > 1000 || ids.some((id) => typeof id !== 'string' || id === '')))
    throw new InvalidInputError('threadIds must name 1 to 1,000 threads');
  const started = Date.now();
  const report: MigrateReport = {
    before: before.toISOString(),
    found: 0,
    moved: 0,
    closed: 0,
    notMoved: 0,
    elapsedMs: 0,
    threads: [],
    complete: false,
  };
  const progress = () => {
    report.elapsedMs = Date.now() - started;
    options.onProgress?.({
      found: report.found,
      moved: report.moved,
      closed: report.closed,
      notMoved: report.notMoved,
      elapsedMs: report.elapsedMs,
    });
  };
  const listing = temporal.workflow.list({ query: migrationQuery(taskQueue, before, ids) })[Symbol.asyncIterator]();
  const seen = new Set<string>();
  let stopped = false;
  // Threads taken from the listing: claimed before each await, so lanes waiting together never pass `limit`.
  let claimed = 0;
  // One shared iterator, `concurrency` lanes pulling from it: at most that many threads in flight, none listed twice.
  const next = async (): Promise<{ workflowId: string; runId: string } | undefined> => {
    for (;;) {
      if (stopped || options.signal?.aborted || claimed >= limit) return undefined;
      claimed += 1;
      const r = await listing.next();
      if (r.done) {
        claimed -= 1;
        stopped = true;
        return undefined;
      }
      if (seen.has(r.value.workflowId)) {
        claimed -= 1;
        continue;
      }
      seen.add(r.value.workflowId);
      report.found += 1;
      return r.value;
    }
  };
  const lane = async () => {
    for (let wf = await next(); wf; wf = await next()) {
      const t = options.dryRun
        ? { threadId: wf.workflowId, runId: wf.runId, outcome: 'listed' as const }
        : await moveOne(temporal, wf.workflowId, wf.runId, timeoutMs);
      report.threads.push(t);
      if (t.outcome === 'moved') report.moved += 1;
      else if (t.outcome === 'closed') report.closed += 1;
      else if (t.outcome === 'not_moved') report.notMoved += 1;
      progress();
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, lane));
    // Complete when the listing ran out (not stopped by `limit` or `signal`) and every thread found was handled.
    const exhausted = stopped || (!options.signal?.aborted && (await listing.next()).done === true);
    report.complete = exhausted && report.notMoved === 0;
  } finally {
    await listing.return?.();
  }
  progress();
  return report;
}

/** Signals one run to migrate and waits until it continued as new, closed, or `timeoutMs` passed. */
async function moveOne(temporal: Client, threadId: string, runId: string, timeoutMs: number): Promise<MigratedThread> {
  const run = temporal.workflow.getHandle(threadId, runId);
  try {
    // To this run only: a thread that moved by itself meanwhile is not asked again.
    await run.signal(inputSignal, migrateInput(`migrate-${randomUUID()}`, threadId));
  } catch (e) {
    if (isClosedError(e)) return { threadId, runId, outcome: 'closed' };
    return { threadId, runId, outcome: 'not_moved', reason: `signal failed: ${messageOf(e)}` };
  }
  // Described, not long-polled: a long poll on a run's result outlives an abort in this SDK, and a description is one
  // cheap read. 100 ms at first (an idle thread moves within a workflow task), then slower.
  const deadline = Date.now() + timeoutMs;
  for (let wait = 100; Date.now() < deadline; wait = Math.min(wait * 2, 2_000)) {
    await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));
    const { status } = await run.describe();
    if (status.name === 'CONTINUED_AS_NEW') {
      const latest = await temporal.workflow.getHandle(threadId).describe();
      return { threadId, runId, outcome: 'moved', newRunId: latest.runId };
    }
    // Completed, failed, terminated, cancelled, timed out: the run closed some other way; nothing to move.
    if (status.name !== 'RUNNING') return { threadId, runId, outcome: 'closed', reason: status.name.toLowerCase() };
  }
  return { threadId, runId, outcome: 'not_moved', reason: await whyNotMoved(temporal, threadId, timeoutMs) };
}

/** What Temporal and the thread say about a run that did not move in time. */
async function whyNotMoved(temporal: Client, threadId: string, timeoutMs: number): Promise<string> {
  try {
    const problem = await workflowTaskProblem(temporal, threadId);
    if (problem)
      return (
        `${describeProblem(problem)} — its run is older than this release supports, or the release has a bug: ` +
        'serve it with the release it last ran on and migrate from there (docs/upgrading.md)'
      );
  } catch {
    // Described below as not moved in time.
  }
  return `not moved within ${timeoutMs} ms: a slice still running, or no worker polling its task queue; run again`;
}

function isClosedError(e: unknown): boolean {
  return (
    (e as { name?: string })?.name === 'WorkflowNotFoundError' || /already completed|not found/i.test(messageOf(e))
  );
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function positive(n: number, name: string): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidInputError(`${name} must be a positive integer`);
  return n;
}
