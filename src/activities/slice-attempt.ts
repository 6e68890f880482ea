/**
 * One attempt of a slice (docs/architecture.md, "The slice protocol"), phase by phase: load → completion → result →
 * commit → after the commit (notices, dispatch, events). Only the commit makes the slice count: everything before it
 * may run again on a retry, and a retry that finds the slice committed only dispatches its async call again (replay.ts).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { BudgetRef, ModelSpendAmount, SpendAmount } from '../core/budget';
import type { BuiltinCallContext, SpawnableAgent } from '../core/builtins';
import type { AgentDefinition } from './agents';
import { DEFAULT_PRIORITY_KEYS } from '../core/priority';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import { AUTO_COMPACTION_TRIGGERED, threadSystemPrompt } from '../core/texts';
import type { HistoryItem, StoredItem, ThreadEvent } from '../core/types';
import { CommitConflictError, type ConversationStore, type ThreadRecord } from '../store/conversation-store';
import type { Tool } from '../tools/tool';
import { eventsForAppended } from './appended-events';
import { checkBudget } from './budget-check';
import { capacityGate, giveBackHeld } from './capacity-gate';
import { type CompletionOutput, type CompletionPolicy, runCompletion } from './completion';
import type { SliceDispatch, TreeTools } from './dispatch';
import { callLookup, modelView, resolveInjected, threadChain } from './history';
import { routedSpend, routedSpendByModel } from './model-routing';
import { replayCommitted } from './replay';
import type { SliceDependencies } from './slice-dependencies';
import type { SliceControl } from './slice-jobs';
import type { ToolCallKind } from './slice-metrics';
import { type BuiltSlice, buildSliceResult, type CompactionSettings } from './slice-result';
import { type ResolvedInputs, resolveStaged } from './staged-inputs';

/** What every phase of an attempt reads: the worker's dependencies and what `createSliceActivities` derived from them once. */
export interface SliceRuntime {
  /** The worker's dependencies, with the model, tools, instructions and limits of the slice's agent. */
  deps: SliceDependencies;
  /** The definition the slice runs (issue 40). */
  agent: AgentDefinition;
  /** Agents `spawn_thread` offers this agent's threads (none: the original runtime's tool). */
  spawnable?: readonly SpawnableAgent[];
  /** The tools of a thread's tree (dispatch.ts). */
  toolsFor: TreeTools;
  policy: CompletionPolicy;
  compaction: CompactionSettings;
  /** `deps.emit`, guarded (dispatch.ts). */
  emit(event: ThreadEvent): void;
  io: SliceDispatch;
  /** How the metrics count a tool call by name, among a tree's tools. */
  classify(tools: ReadonlyMap<string, Tool>): (name: string) => ToolCallKind;
}

/** A slice's thread and inputs, loaded and checked: what its completion reads. */
interface LoadedSlice {
  record: ThreadRecord;
  /** The thread's committed length, checked equal to the input's `expectedLength`. */
  committedLength: number;
  /** The thread and its ancestors, root first. */
  chain: ThreadRecord[];
  ancestors: string[];
  /** The tools of the thread's tree, as the completion offers them. */
  tools: ReadonlyMap<string, Tool>;
  staged: ResolvedInputs;
  view: HistoryItem[];
  /** The slice's inputs, staged content and injected call details resolved. */
  append: StoredItem[];
}

/** A load finds either the slice to run, or that it already committed (then its replayed result is the answer). */
type Load = { loaded: LoadedSlice } | { committed: SliceResult };

/**
 * One slice, under `control`: an activity's context, or a job that a local activity started and another adopts.
 * `startedAt` (`performance.now()`) times the slice for the metrics.
 */
export async function sliceAttempt(
  rt: SliceRuntime,
  input: SliceInput,
  control: SliceControl,
  startedAt: number,
): Promise<SliceResult> {
  // A thread woken for provider capacity holds a grant until its first request claims it: an attempt that ends before
  // any request (committed already, over budget, a failed load) gives it back at once rather than after the hold.
  let loaded: LoadedSlice;
  let budgetRefs: Awaited<ReturnType<typeof checkBudget>>;
  try {
    const load = await loadSlice(rt, input);
    if ('committed' in load) {
      await giveBackHold(rt, input.threadId);
      return load.committed;
    }
    loaded = load.loaded;
    // Before the model call: a slice that would start over budget calls nothing and commits nothing (issue 27 §1).
    budgetRefs = await checkBudget(
      rt.deps.store,
      input,
      loaded.record.rootThreadId,
      rt.emit,
      (scope) => rt.deps.metrics?.overBudget?.(scope),
      rt.agent.budget,
    );
  } catch (e) {
    await giveBackHold(rt, input.threadId);
    throw e;
  }
  const out = await complete(rt, input, control, loaded);
  const built = buildSliceResult({
    sliceId: input.sliceId,
    committedLength: loaded.committedLength,
    record: loaded.record,
    append: loaded.append,
    out,
    compaction: rt.compaction,
  });
  if (built.result.compact) rt.emit({ threadId: input.threadId, type: 'info', text: AUTO_COMPACTION_TRIGGERED });
  if (input.inputs) built.result.inputs = input.inputs;
  // What produced this turn (issue 40): recorded with the commit, in the store and in Temporal's history.
  // The model is the one that served the slice (its last round's): another than the first after routing.
  built.result.agent = { name: rt.agent.name, model: out.model, hash: rt.agent.hash };
  // A job handed off by its local activity commits only once adopted: if the workflow task that handed it off failed,
  // nobody adopts it, and the task's retry (which may take more queued inputs under this slice id) must find the slice
  // uncommitted (decision 67).
  await control.commitGate?.();
  const spend = routedSpend(out, rt.deps.prices);
  const byModel = routedSpendByModel(out, rt.deps.prices);
  if (
    (await commitSlice(rt, input, built, loaded.staged, { refs: budgetRefs, amount: spend, byModel })) === 'duplicate'
  ) {
    // A zombie attempt of this slice committed first: its result is the one that counts.
    return replay(rt, input, (await rt.deps.store.findSlice(input.threadId, input.sliceId))!);
  }
  rt.deps.metrics?.committed(
    input.kind,
    performance.now() - startedAt,
    built.result,
    built.items,
    rt.classify(loaded.tools),
  );
  rt.deps.metrics?.billed?.(spend);
  rt.deps.tracing?.committed(built.result, built.items);
  return afterCommit(rt, input, out, loaded, built);
}

const replay = (rt: SliceRuntime, input: SliceInput, prior: SliceResult) =>
  replayCommitted({ store: rt.deps.store, dispatch: rt.io.dispatch }, input, prior);

/** Prior check, thread record, length check, chain, staged inputs and model view, in that order. */
async function loadSlice(rt: SliceRuntime, input: SliceInput): Promise<Load> {
  const { store } = rt.deps;
  const { threadId, sliceId } = input;
  const prior = await store.findSlice(threadId, sliceId);
  if (prior) return { committed: await replay(rt, input, prior) };

  const record = await ensureRecord(store, input);
  const committedLength = await checkedLength(store, input);
  const chain = await threadChain(store, threadId);
  const ancestors = chain.slice(0, -1).map((r) => r.threadId);
  for (const callId of input.interruptedCalls ?? []) rt.io.notify((l) => l.callCancelled?.(threadId, callId));
  // Large inputs arrive as references (core/staged.ts): their content comes from the store, never from Temporal.
  const staged = await resolveStaged(store, input.append);
  if (staged.unavailable.length > 0) {
    // A zombie attempt of this slice may have committed (and removed the blobs) since the check above.
    const committed = await store.findSlice(threadId, sliceId);
    if (committed) return { committed: await replay(rt, input, committed) };
    for (const reason of staged.unavailable) rt.emit({ threadId, type: 'info', text: `Error: ${reason}` });
  }
  const view = await modelView(store, chain);
  const append = await resolveInjected(callLookup(store, chain, view), staged.items);
  const tools = await rt.toolsFor(record.rootThreadId);
  return { loaded: { record, committedLength, chain, ancestors, tools, staged, view, append } };
}

/** The thread's record, created by its first slice (a spawned thread's with its parent, root and spawn order). */
async function ensureRecord(store: ConversationStore, input: SliceInput): Promise<ThreadRecord> {
  const parentRecord = input.spawn && (await store.getThread(input.spawn.parentThreadId));
  return store.ensureThread({
    threadId: input.threadId,
    kind: input.kind,
    ...(input.spawn && {
      parentThreadId: input.spawn.parentThreadId,
      rootThreadId: parentRecord ? parentRecord.rootThreadId : input.spawn.parentThreadId,
      spawnOrder: input.spawn.order,
      spawnToolCallId: input.spawn.toolCallId,
    }),
  });
}

/** The committed length, which must be the one the workflow expects: anything else is a conflict no retry can mend. */
async function checkedLength(store: ConversationStore, input: SliceInput): Promise<number> {
  const committedLength = await store.length(input.threadId);
  if (committedLength !== input.expectedLength) {
    throw ApplicationFailure.nonRetryable(
      new CommitConflictError(input.threadId, input.expectedLength, committedLength).message,
      'CommitConflictError',
    );
  }
  return committedLength;
}

/** A grant held for the thread on its model's limits key, if any, ended (best effort: the hold lapses anyway). */
async function giveBackHold(rt: SliceRuntime, threadId: string): Promise<void> {
  const { limits, wakeups, store, model } = rt.deps;
  if (!limits || !wakeups) return;
  await giveBackHeld(store, wakeups, limits, model.id, threadId).catch(() => undefined);
}

/** The slice's one completion over the model view and its inputs; throws when the attempt was abandoned. */
async function complete(
  rt: SliceRuntime,
  input: SliceInput,
  control: SliceControl,
  loaded: LoadedSlice,
): Promise<CompletionOutput> {
  const { deps, emit } = rt;
  const { threadId, sliceId } = input;
  const { record, view, append } = loaded;
  // `running` opens the slice's events: a late subscriber's replay starts here, so it sees the appended inputs too.
  emit({ threadId, type: 'status', status: 'running' });
  for (const e of eventsForAppended(threadId, append)) emit(e);
  emit({ threadId, type: 'completion_started', sliceId, at: loaded.committedLength });
  const foreground = foregroundOf(input);
  // The thread id is its workflow id: the wake for a refused slice is a signal to it.
  // A store without a wake-up list (one of the user's own, without `dispatch`) leaves refused threads to their timers.
  const waiting = deps.wakeups && deps.store.capacity.dispatch && { waiter: threadId, wakeups: deps.wakeups };
  const share = {
    key: input.share?.key ?? record.rootThreadId,
    ...(input.share?.weight !== undefined && { weight: input.share.weight }),
    ...(input.share?.priority !== undefined && { priority: input.share.priority }),
  };
  const out = await runCompletion({
    threadId,
    sliceId,
    system: threadSystemPrompt(deps.systemPrompt, threadId, record.rootThreadId),
    history: [...view, ...append.map((s) => s.item)],
    tools: loaded.tools,
    model: deps.model,
    policy: rt.policy,
    signal: control.signal,
    emit,
    toolContext: rt.io.toolContext(threadId, record.rootThreadId, loaded.ancestors, input.userId),
    runtime: { ...runtimeContext(deps.store, input, loaded), ...(rt.spawnable && { spawnable: rt.spawnable }) },
    capacity: capacityGate(deps.store, deps.limits, deps.model.id, foreground, share, waiting),
    // The agent's next models (issue 40 §4), each through the gate of its own limits key (model-routing.ts).
    fallbacks: rt.agent.models.slice(1).map(({ model, limits }) => ({
      model,
      capacity: capacityGate(deps.store, limits, model.id, foreground, share, waiting),
    })),
    closedForMs: rt.agent.closedForMs,
  });
  throwIfAbandoned(out, control);
  return out;
}

/** What the built-in runtime tools read about the thread. */
function runtimeContext(
  store: ConversationStore,
  input: SliceInput,
  { record, chain }: LoadedSlice,
): BuiltinCallContext {
  return {
    threadId: input.threadId,
    kind: record.kind,
    stack: chain.map((r) => r.threadId),
    parentThreadId: record.parentThreadId,
    subscriptions: new Set(input.subscriptions ?? []),
    parentOf: async (id) => {
      const r = await store.getThread(id);
      return r ? r.parentThreadId : null;
    },
    now: () => Date.now(),
  };
}

/**
 * Only the workflow's own cancel (a user text interrupting the slice) commits a partial turn. Any other cancel —
 * this attempt's timeout passed (the server answers its heartbeat NOT_FOUND / TIMED_OUT), the worker shuts down,
 * the activity was paused or reset — means the server has discarded or will retry this attempt: a commit here
 * would answer for the next attempt with a turn cut off mid-stream.
 */
function throwIfAbandoned(out: CompletionOutput, control: SliceControl): void {
  if (out.interrupted && control.signal.aborted && !control.interruptRequested()) {
    const reason =
      control.signal.reason instanceof Error ? control.signal.reason.message : String(control.signal.reason);
    throw ApplicationFailure.retryable(`slice attempt abandoned (${reason}): nothing committed`, 'SliceAbandoned');
  }
}

/**
 * The atomic commit of the slice's items, result, summary, consumed staged inputs and spend (`'duplicate'`: another
 * attempt's won, and its spend is the one billed).
 */
function commitSlice(
  rt: SliceRuntime,
  input: SliceInput,
  { items, result, summary }: BuiltSlice,
  staged: ResolvedInputs,
  spend: { refs: BudgetRef[]; amount: SpendAmount; byModel: ModelSpendAmount[] },
): Promise<'committed' | 'duplicate'> {
  return rt.deps.store.commit({
    threadId: input.threadId,
    sliceId: input.sliceId,
    expectedLength: input.expectedLength,
    items,
    result,
    ...(summary && { summary }),
    ...(staged.consumed.length > 0 && { consumedStaged: staged.consumed }),
    spend,
  });
}

/** After the commit: the summary's notice, closing, lifecycle notices, the async call's dispatch and the final status. */
async function afterCommit(
  rt: SliceRuntime,
  input: SliceInput,
  out: CompletionOutput,
  loaded: LoadedSlice,
  { result, summary }: BuiltSlice,
): Promise<SliceResult> {
  const { deps, emit, io } = rt;
  const { threadId, sliceId } = input;
  if (summary) {
    // The summary is in the store with this commit: from now on the parent's slices load it (docs/semantics.md §12).
    emit({ threadId: summary.threadId, type: 'compaction_applied', sourceThreadId: threadId, upTo: summary.upTo });
    deps.metrics?.compactionApplied();
  }
  if (result.action?.type === 'close') {
    await deps.store.markClosed(threadId);
    io.notify((l) => l.threadClosed?.(threadId));
  }
  for (const callId of out.cancelledSubscriptions) io.notify((l) => l.callCancelled?.(threadId, callId));
  emit({ threadId, type: 'completion_finished', sliceId, usage: out.usage, length: result.length });
  if (out.asyncCall)
    result.followUps = await io.dispatch(
      threadId,
      loaded.record.rootThreadId,
      out.asyncCall,
      loaded.ancestors,
      input.userId,
    );
  emit({ threadId, type: 'status', status: result.pendingCall ? 'waiting_tool' : 'idle' });
  return result;
}

/**
 * Whether a slice may use a provider limit's reserve: its thread's priority key is a user-facing root's or better (the
 * default root's 2; children and event handlers run at 4, batch roots at 3 or later).
 */
function foregroundOf(input: SliceInput): boolean {
  const key =
    input.share?.priority ?? (input.kind === 'root' ? DEFAULT_PRIORITY_KEYS.root : DEFAULT_PRIORITY_KEYS.background);
  return key <= DEFAULT_PRIORITY_KEYS.root;
}
