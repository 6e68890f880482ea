/**
 * A thread moved to another agent (issue 40, release 0.13): a `set_agent` input, taken at its signal. The next slice
 * runs the new agent; a thread that waited because its agent was missing tries again at once.
 */
import { upsertMemo, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { searchAttributes } from './definitions';
import type { ThreadState } from './state';

export function movedTo(st: ThreadState, agent: string): void {
  if (st.agent === agent && st.agentMissing === undefined) return;
  st.agent = agent;
  st.agentMissing = undefined;
  st.agentChecks = 0;
  // Only where the thread's start carried `AgentName`: that proves the server has it registered (an upsert of an
  // unregistered attribute would fail every workflow task of the thread).
  if (workflowInfo().typedSearchAttributes.get(searchAttributes.AgentName) !== undefined)
    upsertSearchAttributes([{ key: searchAttributes.AgentName, value: agent }]);
  upsertMemo({ agent });
}
