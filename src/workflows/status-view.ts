/**
 * What a thread shows of itself: its status (the `status` query), the `AgentStatus` search attribute and the Temporal
 * UI's current details, kept in step and written only on change.
 */
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { AgentStatus, ThreadStatus } from '../core/types';
import { CARRIED_MAX_BYTES, jsonBytes, newestWithin, PROMPTS_MAX_BYTES, STATUS_MAX_BYTES } from '../core/state-bounds';
import { currentDetails } from './details';
import { v04 } from './patches';
import { searchAttributes } from './definitions';
import type { ThreadWorkflowArgs } from './contract';
import type { ThreadState } from './state';

export interface StatusView {
  status(): AgentStatus;
  snapshot(): ThreadStatus;
  /** Brings the search attribute and the current details up to date (each only if it changed). */
  publish(): void;
  /** Brings the current details alone up to date: no command, so callable anywhere (a signal handler's drop). */
  showDetails(): void;
}

export function statusView(args: ThreadWorkflowArgs, st: ThreadState, sliceRunning: () => boolean): StatusView {
  const opts = args.options ?? {};
  // The status the search attribute already holds (set at start, or by the previous run): no redundant upsert.
  let shownStatus = workflowInfo().typedSearchAttributes.get(searchAttributes.AgentStatus) as AgentStatus | undefined;
  let shownDetails = '';
  // A thread started by hand has no search attributes (the client sets them at start): it names its kind itself.
  let kindMissing = workflowInfo().typedSearchAttributes.get(searchAttributes.ThreadKind) === undefined;

  const status = (): AgentStatus =>
    st.prep.closed
      ? 'closed'
      : // A thread waiting for provider capacity is running a turn (0.7's path only: no other history sets it).
        sliceRunning() || st.throttled !== undefined
        ? 'running'
        : st.agentMissing
          ? 'agent_unavailable'
          : st.overBudget
            ? 'over_budget'
            : st.failed
              ? 'failed'
              : st.prep.pendingCall
                ? 'waiting_tool'
                : 'idle';

  const snapshot = (): ThreadStatus => {
    const s: ThreadStatus = {
      threadId: args.threadId,
      kind: args.kind,
      status: status(),
      pendingCall: st.prep.pendingCall,
      historyLength: st.length,
      slices: st.slices,
      runs: st.runs,
      queued: st.inbox.length,
      deferred: st.prep.deferred.length,
      dropped: { ...st.dropped },
      subscriptions: Object.fromEntries(st.prep.subscriptions),
      children: [...st.children.keys()],
      compaction: { ...st.compaction },
      prompts: [...st.prompts],
    };
    if (args.spawn) s.parentThreadId = args.spawn.parentThreadId;
    if (args.forkedFrom) s.forkedFrom = { ...args.forkedFrom };
    if (st.lastUsage) s.lastUsage = st.lastUsage;
    if (st.usage) s.usage = st.usage;
    if (st.lastError) s.lastError = st.lastError;
    if (st.setAside.length > 0) s.setAside = [...st.setAside];
    if (st.overBudget) s.overBudget = { ...st.overBudget };
    if (st.agent !== undefined) s.agent = st.agent;
    if (st.agentMissing) s.agentUnavailable = { ...st.agentMissing, checks: st.agentChecks };
    if (st.carryOverBytes !== undefined) s.oversizedState = { bytes: st.carryOverBytes, limit: CARRIED_MAX_BYTES };
    return withinStatusBound(s);
  };

  /**
   * The search attribute holds the settled state (idle, waiting_tool, failed, closed): writing `running` too would cost
   * two history events and two visibility writes per slice for a state that lasts seconds (`status()` still shows it).
   */
  const publish = () => {
    const s = status();
    // A slice that checks again for a missing agent (0.13: `agentChecks` is 0 on every other path) leaves the attribute
    // at `agent_unavailable`, not flapping to idle and back at each check.
    const settled: AgentStatus =
      s === 'running' ? (st.agentChecks > 0 ? 'agent_unavailable' : st.prep.pendingCall ? 'waiting_tool' : 'idle') : s;
    const updates: SearchAttributeUpdatePair[] = [];
    if (kindMissing) {
      kindMissing = false;
      // 0.4's patch, asked only here (decision 58).
      v04();
      updates.push({ key: searchAttributes.ThreadKind, value: args.kind });
    }
    if (opts.statusSearchAttribute !== false && settled !== shownStatus) {
      updates.push({ key: searchAttributes.AgentStatus, value: settled });
      shownStatus = settled;
    }
    // One command (one history event, one visibility write) for all of them.
    if (updates.length > 0) upsertSearchAttributes(updates);
    showDetails();
  };

  const showDetails = () => {
    const details = currentDetails(args.threadId, st, status(), args.forkedFrom);
    if (details !== shownDetails) {
      setCurrentDetails(details);
      shownDetails = details;
    }
  };

  return { status, snapshot, publish, showDetails };
}

/**
 * A status answer within {@link STATUS_MAX_BYTES} (issue 38 §2): it is a query's answer and `waitForIdle`'s result, and
 * an update result over the server's payload limit failed every workflow task. The thread's state is bounded part by
 * part already; this is the last guard: the oldest prompts, set-aside batches and children go first, each named in
 * `truncated`. Not compared on replay (a query's or an update's result never is).
 */
export function withinStatusBound(s: ThreadStatus): ThreadStatus {
  if (jsonBytes(s) <= STATUS_MAX_BYTES) return s;
  const cut: string[] = [];
  const shrink = (name: string, f: () => void) => {
    if (jsonBytes(s) <= STATUS_MAX_BYTES) return;
    f();
    cut.push(name);
  };
  shrink('prompts', () => (s.prompts = newestWithin(s.prompts, s.prompts.length, PROMPTS_MAX_BYTES / 4)));
  shrink('setAside', () => (s.setAside = s.setAside?.slice(-1)));
  shrink('children', () => (s.children = newestWithin(s.children, 1000, STATUS_MAX_BYTES / 8)));
  shrink('subscriptions', () => (s.subscriptions = {}));
  shrink('prompts', () => (s.prompts = []));
  shrink('setAside', () => delete s.setAside);
  shrink('lastError', () => delete s.lastError);
  return { ...s, truncated: [...new Set(cut)] };
}
