/**
 * Threads whose workflow task keeps failing — a deploy that changed workflow code without `patched()`, or a bug in
 * the workflow. Such a thread is still running, answers no query and takes no update; its inputs wait in Temporal
 * until a fixed worker replays it (docs/upgrading.md, "When a deploy goes wrong").
 */
import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ThreadKind, ThreadStatus } from '../core/types';
import type { ConversationStore } from '../store/conversation-store';
import { searchAttributes } from '../workflows/definitions';

/**
 * Temporal (1.30+) sets this system search attribute on a running workflow after
 * `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute` consecutive workflow task failures or timeouts
 * (server default 5; the dev server we start uses 1), and clears it at the next successful task.
 */
export const REPORTED_PROBLEMS = defineSearchAttributeKey('TemporalReportedProblems', SearchAttributeType.KEYWORD_LIST);
export const STUCK_QUERY = `ExecutionStatus = 'Running' AND TemporalReportedProblems IN ('category=WorkflowTaskFailed', 'category=WorkflowTaskTimedOut')`;

export interface WorkflowTaskProblem {
  /** Attempt of the pending workflow task: 2 after one failure, and counting. */
  attempt: number;
  category: 'WorkflowTaskFailed' | 'WorkflowTaskTimedOut';
  /** The failure's cause, e.g. `NON_DETERMINISTIC_ERROR`, `WORKFLOW_WORKER_UNHANDLED_FAILURE`. */
  cause?: string;
  /** What the worker said (a nondeterminism error names the command or event that did not match). */
  message?: string;
}

const FAILED_CAUSES = temporal.api.enums.v1.WorkflowTaskFailedCause;
const EventType = temporal.api.enums.v1.EventType;

/** Reads the newest events backwards to the last workflow task failure, stopping at a completed task. */
async function lastFailure(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<Omit<WorkflowTaskProblem, 'attempt'> | undefined> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 100,
      ...(nextPageToken && { nextPageToken }),
    });
    for (const e of page.history?.events ?? []) {
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) return undefined;
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) {
        const cause = failed.cause
          ? FAILED_CAUSES[failed.cause]?.replace('WORKFLOW_TASK_FAILED_CAUSE_', '')
          : undefined;
        return {
          category: 'WorkflowTaskFailed',
          ...(cause && { cause }),
          ...(failed.failure?.message && { message: failed.failure.message }),
        };
      }
      if (e.workflowTaskTimedOutEventAttributes)
        return {
          category: 'WorkflowTaskTimedOut',
          message: 'the worker did not answer within the workflow task timeout',
        };
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return undefined;
}

/**
 * Why a running thread's workflow task is failing, from its description and history; undefined when the thread is
 * not running or its pending task (if any) is on its first attempt.
 */
export async function workflowTaskProblem(
  client: Client,
  threadId: string,
  description?: WorkflowExecutionDescription,
): Promise<WorkflowTaskProblem | undefined> {
  const d = description ?? (await client.workflow.getHandle(threadId).describe());
  const attempt = d.raw.pendingWorkflowTask?.attempt ?? 0;
  if (d.status.name !== 'RUNNING' || attempt < 2) return undefined;
  // Only the first failure of a run of attempts is in the history (later attempts are transient); it says why.
  const failure = await lastFailure(client, threadId, d.runId);
  return { attempt, ...(failure ?? { category: 'WorkflowTaskFailed' }) };
}

/** A one-line reason for `ThreadStatus.lastError`. */
export function describeProblem(p: WorkflowTaskProblem): string {
  const what = p.category === 'WorkflowTaskTimedOut' ? 'workflow task keeps timing out' : 'workflow task keeps failing';
  return `${what} (attempt ${p.attempt})${p.cause ? `: ${p.cause}` : ''}${p.message ? `: ${p.message}` : ''}`;
}

/**
 * The status of a thread whose workflow task is failing, or undefined when it is not. Only what Temporal and the
 * store know without the workflow is filled in; the counters the workflow keeps read 0 until it runs again.
 */
export async function failedThreadStatus(
  client: Client,
  threadId: string,
  store?: ConversationStore,
): Promise<ThreadStatus | undefined> {
  const description = await client.workflow.getHandle(threadId).describe();
  const problem = await workflowTaskProblem(client, threadId, description);
  if (!problem) return undefined;
  const sa = description.typedSearchAttributes;
  const parent = sa.get(searchAttributes.ParentThreadId);
  return {
    threadId,
    kind: (sa.get(searchAttributes.ThreadKind) as ThreadKind | undefined) ?? 'root',
    status: 'failed',
    ...(parent && { parentThreadId: parent }),
    pendingCall: null,
    historyLength: store ? await store.length(threadId) : 0,
    slices: 0,
    runs: 0,
    queued: 0,
    deferred: 0,
    dropped: {},
    subscriptions: {},
    children: [],
    compaction: { completed: 0 },
    prompts: [],
    lastError: describeProblem(problem),
  };
}

/** Resolves undefined after `ms`; `cancel` lets the process exit sooner. */
function pause(ms: number): { done: Promise<undefined>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return { done, cancel: () => clearTimeout(timer) };
}

/**
 * The status query's answer, or `failed` when the thread's workflow task is failing. The description decides (a
 * worker of another build can answer a query from the history while the task keeps failing on this one), read along
 * with the query: one extra call for a healthy thread. The server rejects a query only from a failing task's third
 * attempt on and holds it up to its query timeout (30 s) before that, so while the query is held the description is
 * read again every `recheckMs`.
 */
export async function statusOrFailed(
  client: Client,
  threadId: string,
  query: () => Promise<ThreadStatus>,
  store?: ConversationStore,
  recheckMs = 1000,
): Promise<ThreadStatus> {
  const queried = query().then(
    (status) => ({ status }),
    (error: unknown) => ({ error }),
  );
  for (;;) {
    const failed = await failedThreadStatus(client, threadId, store).catch(() => undefined);
    if (failed) return failed;
    const held = pause(recheckMs);
    const answer = await Promise.race([queried, held.done]);
    held.cancel();
    if (!answer) continue;
    if ('status' in answer) return answer.status;
    // The query failed while the first failing attempt ran: the description can tell by now.
    const later = await failedThreadStatus(client, threadId, store).catch(() => undefined);
    if (later) return later;
    throw answer.error;
  }
}

/** Whether a list query failed because the server has no `TemporalReportedProblems` (before Temporal 1.30). */
function unknownAttribute(e: unknown): boolean {
  const text = (x: unknown): string => (x instanceof Error ? `${x.message} ${text(x.cause)}` : '');
  return /TemporalReportedProblems/.test(text(e));
}

/** The problem as Temporal's attribute spells it, e.g. `cause=WorkflowTaskFailedCauseNonDeterministicError`. */
function reportedProblems(p: WorkflowTaskProblem): string[] {
  const pascal = (s: string) =>
    s.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u: string, c: string) => c.toUpperCase());
  return [`category=${p.category}`, ...(p.cause ? [`cause=WorkflowTaskFailedCause${pascal(p.cause)}`] : [])];
}

/** Running workflows matching `clauses` whose task is failing, found by describing each: for servers without the attribute. */
export async function* stuckByDescribing(
  client: Client,
  clauses: string[],
): AsyncGenerator<{ wf: WorkflowExecutionInfo; problems: string[] }> {
  for await (const wf of client.workflow.list({ query: [...clauses, `ExecutionStatus = 'Running'`].join(' AND ') })) {
    const problem = await workflowTaskProblem(client, wf.workflowId);
    if (problem) yield { wf, problems: reportedProblems(problem) };
  }
}

/** Workflows matching `clauses` whose task is failing: by the reported-problems attribute, else by describing them. */
export async function* stuckWorkflows(
  client: Client,
  clauses: string[],
): AsyncGenerator<{ wf: WorkflowExecutionInfo; problems: string[] }> {
  try {
    for await (const wf of client.workflow.list({ query: [...clauses, STUCK_QUERY].join(' AND ') })) {
      yield { wf, problems: wf.typedSearchAttributes.get(REPORTED_PROBLEMS) ?? [] };
    }
  } catch (e) {
    if (!unknownAttribute(e)) throw e;
    yield* stuckByDescribing(client, clauses);
  }
}
