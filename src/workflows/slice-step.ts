/**
 * One batch as one slice (docs/architecture.md, "The slice protocol"): hand it to the slice runner, then apply what
 * came back — a result to the thread's state, or a failure that sets the batch aside or blocks the thread
 * (`failures.ts`). Neither step awaits anything of its own: the loop awaits the slice and the runtime action, so
 * the workflow reaches every command at the same point, and in the same microtask order, as when this was inline.
 */
import { uuid4, workflowInfo } from '@temporalio/workflow';
import { type BudgetExceeded, latestPerScope } from '../core/budget';
import type { ThrottledSlice } from '../core/capacity';
import { sliceIdFor } from '../core/ids';
import { compactionInput } from '../core/inputs';
import {
  type RuntimeAction,
  type SliceInput,
  type SliceInputs,
  type SliceResult,
  SLICE_REFUSED,
} from '../core/slice-protocol';
import { addUsage, type StoredItem } from '../core/types';
import { BLOCKING_FAILURES, SET_ASIDE_KEPT, setAside } from './failures';
import type { Inbox } from './inbox';
import { dropStalePrompts, type LoopState } from './loop-state';
import { v02, v06, v07, v013 } from './patches';
import type { AgentUnavailable } from '../core/agents';
import { userIdOf } from './runtime-actions';
import type { SliceOutcome, SliceRunner } from './slice-runner';
import type { ThreadWorkflowArgs } from './contract';
import type { ThreadState } from './state';
import { sliceSummary } from './ui-text';

/** What a slice step reads and changes: the run's arguments, the thread's state and loop state, and its parts. */
export interface SliceContext {
  args: ThreadWorkflowArgs;
  st: ThreadState;
  loop: LoopState;
  inbox: Inbox;
  slices: SliceRunner;
  /** The status view's `publish`: the search attribute and current details, each only if it changed. */
  publish(): void;
}

/**
 * Runs `append` as the next slice: carries it until a result arrives, shows it in the transcript (not again on a
 * retry), shows the thread running, and starts the slice. A user text arriving meanwhile cancels it (the slice
 * commits what it streamed). Not `async`: it returns the runner's promise itself, so the loop resumes exactly when
 * it did when this was inline.
 */
export function runBatch(
  ctx: SliceContext,
  append: StoredItem[],
  interruptedCalls: string[],
  local: boolean,
  inputs?: SliceInputs,
): Promise<SliceOutcome> {
  const { args, st, loop } = ctx;
  st.carry = append;
  if (!loop.retrying) ctx.inbox.note(append.map((s) => s.item));
  loop.sliceRunning = true;
  ctx.publish();
  if (local) loop.lastLocalTask = workflowInfo().historyLength;
  const input: SliceInput = {
    threadId: args.threadId,
    kind: args.kind,
    sliceId: sliceIdFor(args.threadId, st.slices),
    append,
    expectedLength: st.length,
    subscriptions: [...st.prep.subscriptions.keys()],
  };
  if (args.spawn) input.spawn = args.spawn;
  if (interruptedCalls.length > 0) input.interruptedCalls = interruptedCalls;
  if (inputs) input.inputs = inputs;
  const userId = userIdOf(ctx);
  if (userId !== undefined) input.userId = userId;
  if (args.tenant !== undefined) input.tenant = args.tenant;
  // The thread's agent (issue 40), resolved by the worker: activity input only, no command.
  if (st.agent !== undefined) input.agent = st.agent;
  // The provider limiter shares a key between fairness keys, by priority, as the task queue does (activity input only:
  // no command).
  const priority = workflowInfo().priority;
  if (priority?.fairnessKey)
    input.share = {
      key: priority.fairnessKey,
      ...(priority.fairnessWeight !== undefined && { weight: priority.fairnessWeight }),
      ...(priority.priorityKey !== undefined && { priority: priority.priorityKey }),
    };
  // Nothing is in flight here: what an interrupted slice took is sent again, once per scope.
  st.budgetUpdates = latestPerScope(st.budgetUpdates);
  st.budgetSent = st.budgetUpdates.length;
  if (st.budgetSent > 0) input.budgetUpdates = [...st.budgetUpdates];
  const { replyBefore } = loop;
  const summary = sliceSummary(
    st.slices + 1,
    append,
    {
      toolName: loop.toolName,
      callLine: loop.callLine,
      ...(replyBefore !== undefined && { replyBefore }),
      // Activity summaries are user metadata, not compared on replay (test/ui-replay.test.ts): no patch.
      ...(st.agent !== undefined && { agent: st.agent }),
    },
    loop.retrying,
  );
  // A wake is for a refusal of the slice starting now (its thread joins the wake-up list during it), not an earlier one.
  loop.capacityWoken = false;
  return ctx.slices.run(input, summary, local);
}

/**
 * Applies a slice's outcome once it is back: a result to the thread's state, a refusal (budget, capacity) or a
 * failure (a cancelled slice changes nothing: its carry is retried). Returns the runtime action the loop must carry out.
 */
export function settleSlice(ctx: SliceContext, outcome: SliceOutcome, append: StoredItem[]): RuntimeAction | undefined {
  ctx.loop.sliceRunning = false;
  if ('ok' in outcome) {
    appliedBudgetUpdates(ctx.st);
    applyResult(ctx, outcome.ok);
    return outcome.ok.action;
  }
  // Only a worker with budgets refuses a slice so; 0.6's patch is asked only then, where 0.6 asked it.
  if ('failed' in outcome && outcome.type === SLICE_REFUSED.overBudget) {
    v06();
    stopOverBudget(ctx, outcome, append);
    return undefined;
  }
  // Only a worker with provider limits refuses a slice so; 0.7's patch is asked only then.
  if ('failed' in outcome && outcome.type === SLICE_REFUSED.throttled) {
    v07();
    waitForCapacity(ctx, outcome, append);
    return undefined;
  }
  // Only a worker of 0.13 or later refuses a slice so; 0.13's patch is asked only then.
  if ('failed' in outcome && outcome.type === SLICE_REFUSED.agentUnavailable && v013()) {
    waitForAgent(ctx, outcome, append);
    return undefined;
  }
  if ('failed' in outcome) recordFailure(ctx, outcome, append);
  return undefined;
}

/**
 * A slice refused because no worker defines the thread's agent (issue 40 §5): nothing was called or committed, and
 * it is no failure. The thread keeps its batch and queue and waits until a `set_agent` or its next check.
 */
function waitForAgent(ctx: SliceContext, outcome: { failed: string; details?: unknown }, append: StoredItem[]): void {
  keepBatch(ctx.st, append);
  const d = outcome.details as Partial<AgentUnavailable> | undefined;
  const agent = typeof d?.agent === 'string' ? d.agent.slice(0, 100) : (ctx.st.agent ?? 'default');
  const known = Array.isArray(d?.known) ? d.known.filter((k) => typeof k === 'string').slice(0, 20) : undefined;
  const reason = typeof d?.reason === 'string' ? d.reason.slice(0, 500) : undefined;
  ctx.st.agentChecks += 1;
  ctx.st.agentMissing = {
    agent,
    ...(known && { known: known.map((k) => k.slice(0, 100)) }),
    ...(reason !== undefined && { reason }),
  };
}

/**
 * A slice that found no provider capacity (issue 27 §2): nothing was called or committed, and it is no failure. The
 * thread keeps the batch (retried under the same slice id), waits on a timer for as long as the limiter asked — or,
 * on the key's wake-up list (0.13), for its `capacity` signal with that timer as a fallback — and runs it again.
 */
function waitForCapacity(
  ctx: SliceContext,
  outcome: { failed: string; details?: unknown },
  append: StoredItem[],
): void {
  keepBatch(ctx.st, append);
  const d = outcome.details;
  const asked = isThrottled(d) ? d : { key: '', reason: 'rate_limited' as const, retryAfterMs: 0 };
  ctx.st.throttled = {
    key: asked.key,
    reason: asked.reason,
    retryAfterMs: Math.min(Math.max(asked.retryAfterMs, MIN_CAPACITY_WAIT_MS), MAX_CAPACITY_WAIT_MS),
    // On the key's wake-up list (a worker of 0.13): the thread waits for the `capacity` signal too.
    ...(asked.queued === true && { queued: true }),
  };
}

function isThrottled(d: unknown): d is ThrottledSlice {
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof (d as ThrottledSlice).key === 'string' &&
    typeof (d as ThrottledSlice).reason === 'string' &&
    Number.isFinite((d as ThrottledSlice).retryAfterMs)
  );
}

const MIN_CAPACITY_WAIT_MS = 100;
const MAX_CAPACITY_WAIT_MS = 5 * 60_000;

/** A refused slice (nothing called or committed): its budget updates are done, its batch is retried as it was. */
function keepBatch(st: ThreadState, append: StoredItem[]): void {
  appliedBudgetUpdates(st);
  st.carry = append;
}

/** The slice wrote the budget updates it was given before its check: they are done. */
function appliedBudgetUpdates(st: ThreadState): void {
  if (st.budgetSent > 0) st.budgetUpdates.splice(0, st.budgetSent);
  st.budgetSent = 0;
}

/**
 * A slice refused for budget (issue 27 §1): nothing was called or committed. The thread keeps the batch (retried
 * under the same slice id, as a failed slice's is), keeps queueing inputs, and waits for a `budget` signal.
 */
function stopOverBudget(ctx: SliceContext, outcome: { failed: string; details?: unknown }, append: StoredItem[]): void {
  const { st } = ctx;
  keepBatch(st, append);
  st.overBudget = isExceeded(outcome.details)
    ? outcome.details
    : { scope: 'thread', key: ctx.args.threadId, field: 'totalTokens', limit: 0, spend: 0 };
}

function isExceeded(d: unknown): d is BudgetExceeded {
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof (d as BudgetExceeded).scope === 'string' &&
    typeof (d as BudgetExceeded).key === 'string' &&
    typeof (d as BudgetExceeded).limit === 'number' &&
    typeof (d as BudgetExceeded).spend === 'number'
  );
}

/** A committed slice: its length, pending call and results become the thread's, and the carry is done. */
function applyResult(ctx: SliceContext, r: SliceResult): void {
  const { st, loop } = ctx;
  st.carry = [];
  st.length = r.length;
  st.slices += 1;
  st.prep.pendingCall = r.pendingCall;
  if (r.pendingCall) loop.lastCall = r.pendingCall;
  // The pending call is the slice's last: its line names it in the summary of the slice its result starts.
  const pendingName = r.pendingCall ? `${r.pendingCall.name} ` : undefined;
  loop.lastCallLine = pendingName ? [...(r.calls ?? [])].reverse().find((c) => c.startsWith(pendingName)) : undefined;
  loop.replyBefore = r.pendingCall ? undefined : r.lastText;
  st.lastCalls = r.calls;
  ctx.inbox.note([], [...(r.lastText ? [`assistant: ${r.lastText}`] : []), ...(r.calls ?? []).map((c) => `call ${c}`)]);
  dropStalePrompts(st);
  for (const id of r.answeredCallIds) st.prep.processedToolCalls.add(id);
  for (const id of r.cancelledSubscriptions ?? []) st.prep.subscriptions.delete(id);
  // Results produced by dispatch (failures, validation) go ahead of anything that arrived meanwhile.
  st.inbox.unshift(...r.followUps);
  if (r.usage) st.lastUsage = r.usage;
  st.usage = addUsage(st.usage, r.usage);
  // A message into our own queue, like a manual `thread.compact()`.
  if (r.compact && !st.compaction.running) st.inbox.push(compactionInput(uuid4(), ctx.args.threadId));
  if (r.lastText) st.lastText = r.lastText;
  st.lastError = r.error;
  st.failed = false;
  st.agentChecks = 0;
  if (!r.interrupted) loop.interruptNext = false;
}

/**
 * A slice that failed on every attempt (0.2): the thread shows `failed`; a failure that says nothing about the inputs
 * blocks it until new input arrives, any other sets the batch aside. Asks `v02()` once.
 */
function recordFailure(ctx: SliceContext, outcome: { failed: string; type?: string }, append: StoredItem[]): void {
  const { st, loop } = ctx;
  st.lastError = outcome.failed;
  v02();
  st.failed = true;
  if (!outcome.type || !BLOCKING_FAILURES.has(outcome.type)) {
    const aside = setAside(sliceIdFor(ctx.args.threadId, st.slices), append, outcome.failed);
    st.setAside = [...st.setAside, aside.record].slice(-SET_ASIDE_KEPT);
    // The next slice gets a new id: nothing of this one was committed, and its id must not answer for another.
    st.slices += 1;
    st.carry = aside.replacements;
  } else {
    st.blocked = true;
    loop.blockedAt = { inputs: loop.inputsArrived, queued: st.inbox.length };
  }
}
