/** Listing threads from Temporal's visibility store by their search attributes (`AgentClient.listThreads`). */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { AgentStatus, ThreadKind } from '../core/types';
import { searchAttributes, THREAD_WORKFLOW_TYPE } from '../workflows/definitions';
import { stuckWorkflows } from './stuck';

export interface ThreadFilter {
  status?: AgentStatus;
  kind?: ThreadKind;
  parentThreadId?: string;
  /** Only threads of this agent (issue 40; `default`: threads that name none), by the `AgentName` search attribute. */
  agent?: string;
  /**
   * Only running threads whose workflow task keeps failing (e.g. after a deploy with a nondeterministic change), by
   * Temporal's `TemporalReportedProblems` search attribute, or by describing running threads where the server lacks
   * it. Their summaries have status `failed`.
   * @default false
   */
  stuck?: boolean;
}

export interface ThreadSummary {
  threadId: string;
  status?: AgentStatus;
  kind?: ThreadKind;
  parentThreadId?: string;
  /** The thread's agent, where the server has `AgentName` (issue 40). */
  agent?: string;
  /** Whether the thread's workflow is still running (closed children have completed). */
  running: boolean;
  /** With `stuck`: what Temporal reports, e.g. `category=WorkflowTaskFailed`, `cause=WorkflowTaskFailedCauseNonDeterministicError`. */
  problems?: string[];
}

const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function summaryOf(wf: WorkflowExecutionInfo): ThreadSummary {
  const sa = wf.typedSearchAttributes;
  const summary: ThreadSummary = { threadId: wf.workflowId, running: wf.status.name === 'RUNNING' };
  const status = sa.get(searchAttributes.AgentStatus);
  const kind = sa.get(searchAttributes.ThreadKind);
  const parent = sa.get(searchAttributes.ParentThreadId);
  if (status) summary.status = status as AgentStatus;
  if (kind) summary.kind = kind as ThreadKind;
  if (parent) summary.parentThreadId = parent;
  const agent = sa.get(searchAttributes.AgentName);
  if (agent) summary.agent = agent;
  return summary;
}

/** Threads of `taskQueue` matching `filter`. */
export async function* listThreads(
  temporal: Client,
  taskQueue: string,
  filter: ThreadFilter,
): AsyncGenerator<ThreadSummary> {
  const clauses = [`WorkflowType = ${quote(THREAD_WORKFLOW_TYPE)}`, `TaskQueue = ${quote(taskQueue)}`];
  if (filter.status) clauses.push(`AgentStatus = ${quote(filter.status)}`);
  if (filter.kind) clauses.push(`ThreadKind = ${quote(filter.kind)}`);
  if (filter.parentThreadId) clauses.push(`ParentThreadId = ${quote(filter.parentThreadId)}`);
  if (filter.agent) clauses.push(`AgentName = ${quote(filter.agent)}`);
  if (filter.stuck) {
    for await (const { wf, problems } of stuckWorkflows(temporal, clauses))
      yield { ...summaryOf(wf), status: 'failed', problems };
    return;
  }
  for await (const wf of temporal.workflow.list({ query: clauses.join(' AND ') })) yield summaryOf(wf);
}
