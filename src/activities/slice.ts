/**
 * The `runSlice` activity (docs/architecture.md, "The slice protocol"): load → one completion → commit atomically → dispatch at most one async tool
 * call. Its input and output stay small; the conversation moves only between this process and the store.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { messageIds } from '../core/ids';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import { AUTO_COMPACTION_TRIGGERED, DEFAULT_SYSTEM_PROMPT, systemPromptSuffix, TOOL_CALL_FAILED } from '../core/texts';
import { contextTokens, type InputMessage, type ThreadEvent, type ThreadKind, type TokenUsage } from '../core/types';
import type { ModelProvider } from '../model/provider';
import { CommitConflictError, type ConversationStore, type NewSummary, type ThreadRecord } from '../store/conversation-store';
import { toolResult } from '../tools/messages';
import type { Tool, ToolContext, ToolLifecycle } from '../tools/tool';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { boundedReply, callLines } from '../core/slice-outline';
import { type AsyncCall, type CompletionOutput, type CompletionPolicy, DEFAULT_COMPLETION_POLICY, runCompletion } from './completion';
import { callLookup, modelView, resolveInjected, threadChain } from './history';
import { sliceEntryPoints } from './slice-entry';
import { type SliceControl, SliceJobs } from './slice-jobs';
import { resolveStaged } from './staged-inputs';
import { eventsForAppended } from './appended-events';
import type { SliceMetrics, ToolCallKind } from './slice-metrics';
import type { SliceTracing } from './slice-tracing';

export interface SliceDependencies {
  store: ConversationStore;
  model: ModelProvider;
  tools: readonly Tool[];
  /** Delivers a message to a thread's input queue; handed to tools as `ctx.send` (`toolName`: the sending tool's). */
  send(message: InputMessage, from?: { toolName: string }): Promise<void>;
  /** Receives live events; must not throw. */
  emit(event: ThreadEvent): void;
  /** Replaces the default system prompt (the thread-id suffix is always added). */
  systemPrompt?: string;
  completionPolicy?: Partial<CompletionPolicy>;
  /**
   * Fraction of the model's context window (`model.contextWindow`) above which a thread compacts itself
   * (default 0.75; 0 turns automatic compaction off).
   */
  compactionThreshold?: number;
  /** Told about interrupted calls, cancelled subscriptions and closed threads (RAP servers). */
  lifecycle?: readonly ToolLifecycle[];
  /** How often the slice heartbeats (default 1 s); heartbeats carry crash detection and cancellation. */
  heartbeatIntervalMs?: number;
  /** Counts slices, tokens and tool calls (default: none; `createAgentWorker` passes the SDK runtime's meter). */
  metrics?: SliceMetrics;
  /** One span per slice attempt (default: none; `createAgentWorker` passes one when tracing is on). */
  tracing?: SliceTracing;
  /** Slices handed off by a local activity wait here for their adopting activity. */
  jobs?: SliceJobs;
  /**
   * This worker's own task queue, where a local slice past its budget is adopted; without it a local slice runs to its
   * end within the local activity.
   */
  handoffQueue?: string;
}

export function createSliceActivities(deps: SliceDependencies) {
  for (const t of deps.tools) {
    if (BUILTIN_TOOL_NAMES.has(t.name)) throw new TypeError(`tool name '${t.name}' is reserved for a built-in runtime tool`);
  }
  const tools = new Map(deps.tools.map((t) => [t.name, t]));
  const threshold = deps.compactionThreshold ?? 0.75;
  const window = deps.model.contextWindow;

  /** Did the last request fill more of the context window than the threshold (docs/semantics.md §12; reference spec §6.1)? */
  const overThreshold = (kind: ThreadKind, usage: TokenUsage | undefined): boolean => {
    const used = usage && contextTokens(usage);
    return kind !== 'compaction' && threshold > 0 && !!window && used !== undefined && used > window * threshold;
  };

  /**
   * The summary a compaction thread leaves for its parent: its `close_thread` report or, if it just answered, that
   * answer. Saved with the commit, so a summary exists exactly when the closing slice committed.
   */
  const compactionSummary = (record: ThreadRecord, out: CompletionOutput, lastText: string | undefined): NewSummary | undefined => {
    if (record.kind !== 'compaction' || !record.parentThreadId || out.error || out.interrupted) return undefined;
    const report = out.action?.type === 'close' ? out.action.report : !out.asyncCall && !out.action ? lastText : undefined;
    if (report === undefined) return undefined;
    return { threadId: record.parentThreadId, sourceThreadId: record.threadId, upTo: record.spawnOrder ?? 0, summary: report };
  };
  const policy: CompletionPolicy = { ...DEFAULT_COMPLETION_POLICY, ...deps.completionPolicy };
  const emit = (e: ThreadEvent) => {
    try {
      deps.emit(e);
    } catch {
      // A broken listener must not fail a slice.
    }
  };

  /** Fire and forget: a notice never delays or fails a slice. */
  const notify = (fn: (l: ToolLifecycle) => Promise<void> | void | undefined) => {
    for (const l of deps.lifecycle ?? []) {
      try {
        void Promise.resolve(fn(l)).catch(() => undefined);
      } catch {
        // ignored: best effort
      }
    }
  };

  const toolContext = (threadId: string, rootThreadId: string, ancestors: string[] = [], userId?: string) => (toolCallId: string, toolName: string): ToolContext => ({
    threadId,
    rootThreadId,
    ancestors,
    ...(userId !== undefined && { userId }),
    toolCallId,
    toolName,
    // The sending tool's name rides along for the Temporal UI (the readable signal payload; decision 62).
    send: (message) => deps.send(message, { toolName }),
  });

  /** Starts an async tool; failures become an error result for the same call (docs/semantics.md §3; reference spec §2.7). */
  async function dispatch(threadId: string, rootThreadId: string, call: AsyncCall, ancestors: string[], userId?: string): Promise<InputMessage[]> {
    if (BUILTIN_TOOL_NAMES.has(call.name)) return []; // carried out by the workflow
    const tool = tools.get(call.name);
    try {
      if (!tool) throw new Error(`tool '${call.name}' is no longer registered on this worker`);
      await tool.execute(call.args, toolContext(threadId, rootThreadId, ancestors, userId)(call.id, call.name));
      return [];
    } catch (e) {
      emit({ threadId, type: 'info', text: `Error: ${e instanceof Error ? e.message : String(e)}` });
      return [toolResult({ threadId, toolCallId: call.id }, TOOL_CALL_FAILED, { id: messageIds.toolError(call.id) })];
    }
  }

  /**
   * A retry of a slice that already committed: dispatch again (tools are idempotent per call id) and return. A slice
   * that began locally has no input in Temporal's history, so its retry proves it asks for the same inputs: answering
   * for other ones would report inputs committed that are not (decision 50).
   */
  async function replayCommitted(input: SliceInput, prior: SliceResult): Promise<SliceResult> {
    if (input.local && prior.appended !== undefined) {
      const committed = await deps.store.load(input.threadId, input.expectedLength, input.expectedLength + prior.appended);
      const same = prior.appended === input.append.length && committed.every((s, i) => s.messageId === input.append[i]?.messageId);
      if (!same) {
        throw ApplicationFailure.nonRetryable(
          `slice ${input.sliceId} was committed with other inputs (${prior.appended}) than this attempt's (${input.append.length})`,
          'SliceDiverged',
        );
      }
    }
    if (!prior.pendingCall) return prior;
    const last = (await deps.store.load(input.threadId, prior.length - 1, prior.length))[0]?.item;
    if (last?.kind !== 'tool_call' || last.id !== prior.pendingCall.id) return prior;
    const record = await deps.store.getThread(input.threadId);
    const call = { ...prior.pendingCall, args: last.args };
    const chain = await threadChain(deps.store, input.threadId);
    const followUps = await dispatch(input.threadId, record?.rootThreadId ?? input.threadId, call, chain.slice(0, -1).map((r) => r.threadId), input.userId);
    return { ...prior, followUps: [...prior.followUps, ...followUps] };
  }

  const metrics = deps.metrics;
  const classify = (name: string): ToolCallKind => {
    if (BUILTIN_TOOL_NAMES.has(name)) return 'builtin';
    const tool = tools.get(name);
    return tool ? (tool.sync ? 'sync' : 'async') : 'unknown';
  };

  /** One attempt of a slice, counted (slice-metrics.ts). */
  async function runSlice(input: SliceInput, control: SliceControl): Promise<SliceResult> {
    metrics?.started(input.kind);
    const attempt = () => sliceAttempt(input, control, performance.now());
    try {
      return await (deps.tracing ? deps.tracing.run(input, attempt) : attempt());
    } catch (e) {
      metrics?.failed(input.kind, e);
      throw e;
    }
  }

  /** One slice, under `control`: an activity's context, or a job that a local activity started and another adopts. */
  async function sliceAttempt(input: SliceInput, control: SliceControl, startedAt: number): Promise<SliceResult> {
    const { threadId, sliceId } = input;
    const prior = await deps.store.findSlice(threadId, sliceId);
    if (prior) return replayCommitted(input, prior);

    const parentRecord = input.spawn && (await deps.store.getThread(input.spawn.parentThreadId));
    const record = await deps.store.ensureThread({
      threadId,
      kind: input.kind,
      ...(input.spawn && {
        parentThreadId: input.spawn.parentThreadId,
        rootThreadId: parentRecord ? parentRecord.rootThreadId : input.spawn.parentThreadId,
        spawnOrder: input.spawn.order,
        spawnToolCallId: input.spawn.toolCallId,
      }),
    });
    const committedLength = await deps.store.length(threadId);
    if (committedLength !== input.expectedLength) {
      throw ApplicationFailure.nonRetryable(
        new CommitConflictError(threadId, input.expectedLength, committedLength).message,
        'CommitConflictError',
      );
    }
    const chain = await threadChain(deps.store, threadId);
    const ancestors = chain.slice(0, -1).map((r) => r.threadId);
    for (const callId of input.interruptedCalls ?? []) notify((l) => l.callCancelled?.(threadId, callId));
    // Large inputs arrive as references (core/staged.ts): their content comes from the store, never from Temporal.
    const staged = await resolveStaged(deps.store, input.append);
    if (staged.unavailable.length > 0) {
      // A zombie attempt of this slice may have committed (and removed the blobs) since the check above.
      const committed = await deps.store.findSlice(threadId, sliceId);
      if (committed) return replayCommitted(input, committed);
      for (const reason of staged.unavailable) emit({ threadId, type: 'info', text: `Error: ${reason}` });
    }
    const view = await modelView(deps.store, chain);
    const append = await resolveInjected(callLookup(deps.store, chain, view), staged.items);

    for (const e of eventsForAppended(threadId, append)) emit(e);
    emit({ threadId, type: 'status', status: 'running' });
    emit({ threadId, type: 'completion_started', sliceId });
    const out = await runCompletion({
      threadId,
      sliceId,
      system: (deps.systemPrompt ?? DEFAULT_SYSTEM_PROMPT) + systemPromptSuffix(threadId, record.rootThreadId),
      history: [...view, ...append.map((s) => s.item)],
      tools,
      model: deps.model,
      policy,
      signal: control.signal,
      emit,
      toolContext: toolContext(threadId, record.rootThreadId, ancestors, input.userId),
      runtime: {
        threadId,
        kind: record.kind,
        stack: chain.map((r) => r.threadId),
        parentThreadId: record.parentThreadId,
        subscriptions: new Set(input.subscriptions ?? []),
        parentOf: async (id) => {
          const r = await deps.store.getThread(id);
          return r ? r.parentThreadId : null;
        },
        now: () => Date.now(),
      },
    });
    // Only the workflow's own cancel (a user text interrupting the slice) commits a partial turn. Any other cancel —
    // this attempt's timeout passed (the server answers its heartbeat NOT_FOUND / TIMED_OUT), the worker shuts down,
    // the activity was paused or reset — means the server has discarded or will retry this attempt: a commit here
    // would answer for the next attempt with a turn cut off mid-stream.
    if (out.interrupted && control.signal.aborted && !control.interruptRequested()) {
      const reason = control.signal.reason instanceof Error ? control.signal.reason.message : String(control.signal.reason);
      throw ApplicationFailure.retryable(`slice attempt abandoned (${reason}): nothing committed`, 'SliceAbandoned');
    }
    const items = [...append, ...out.buffer.flushed];
    const lastText = [...items].reverse().find((s) => s.item.kind === 'assistant')?.item;
    const summary = compactionSummary(record, out, lastText?.kind === 'assistant' ? lastText.text : undefined);
    const result: SliceResult = {
      sliceId,
      length: committedLength + items.length,
      pendingCall: out.asyncCall ? { id: out.asyncCall.id, name: out.asyncCall.name, passive: out.asyncCall.passive } : null,
      answeredCallIds: out.answeredCallIds,
      followUps: [],
      interrupted: out.interrupted,
      appended: append.length,
    };
    if (out.usage) result.usage = out.usage;
    // For the Temporal UI (issue 17 §2): the reply whole up to a bound, and the calls this slice made.
    if (lastText?.kind === 'assistant') result.lastText = boundedReply(lastText.text);
    const calls = callLines(out.buffer.flushed);
    if (calls.length > 0) result.calls = calls;
    if (out.error) result.error = out.error;
    if (out.action) result.action = out.action;
    if (out.cancelledSubscriptions.length > 0) result.cancelledSubscriptions = out.cancelledSubscriptions;
    if (summary) {
      // A compaction thread that answered in text instead of closing: its answer is the summary; close it.
      if (!result.action) result.action = { type: 'close', callId: `${sliceId}-summary` };
    } else if (overThreshold(record.kind, out.lastRoundUsage)) {
      result.compact = true;
      emit({ threadId, type: 'info', text: AUTO_COMPACTION_TRIGGERED });
    }

    const outcome = await deps.store.commit({
      threadId,
      sliceId,
      expectedLength: input.expectedLength,
      items,
      result,
      ...(summary && { summary }),
      ...(staged.consumed.length > 0 && { consumedStaged: staged.consumed }),
    });
    if (outcome === 'duplicate') {
      // A zombie attempt of this slice committed first: its result is the one that counts.
      return replayCommitted(input, (await deps.store.findSlice(threadId, sliceId))!);
    }
    // The summary is in the store with this commit: from now on the parent's slices load it (docs/semantics.md §12).
    metrics?.committed(input.kind, performance.now() - startedAt, result, items, classify);
    deps.tracing?.committed(result, items);
    if (summary) {
      emit({ threadId: summary.threadId, type: 'compaction_applied', sourceThreadId: threadId, upTo: summary.upTo });
      metrics?.compactionApplied();
    }
    if (result.action?.type === 'close') {
      await deps.store.markClosed(threadId);
      notify((l) => l.threadClosed?.(threadId));
    }
    for (const callId of out.cancelledSubscriptions) notify((l) => l.callCancelled?.(threadId, callId));
    emit({ threadId, type: 'completion_finished', sliceId, usage: out.usage });
    if (out.asyncCall) result.followUps = await dispatch(threadId, record.rootThreadId, out.asyncCall, ancestors, input.userId);
    emit({ threadId, type: 'status', status: result.pendingCall ? 'waiting_tool' : 'idle' });
    return result;
  }

  return sliceEntryPoints(runSlice, emit, { jobs: deps.jobs ?? new SliceJobs(), handoffQueue: deps.handoffQueue, heartbeatIntervalMs: deps.heartbeatIntervalMs });
}

export type SliceActivities = ReturnType<typeof createSliceActivities>;
