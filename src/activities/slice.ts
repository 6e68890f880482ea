/**
 * The `runSlice` activity (DESIGN §5): load → one completion → commit atomically → dispatch at most one async tool
 * call. Its input and output stay small; the conversation moves only between this process and the store.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { messageIds } from '../core/ids';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import { DEFAULT_SYSTEM_PROMPT, INTERRUPT_PREFIX, systemPromptSuffix, TOOL_CALL_FAILED } from '../core/texts';
import type { InputMessage, StoredItem, ThreadEvent } from '../core/types';
import { firstText } from '../model/projection';
import type { ModelProvider } from '../model/provider';
import { CommitConflictError, type ConversationStore } from '../store/conversation-store';
import { toolResult } from '../tools/messages';
import type { Tool, ToolContext } from '../tools/tool';
import { BUILTIN_TOOL_NAMES } from '../core/builtin-tools';
import { type AsyncCall, type CompletionPolicy, DEFAULT_COMPLETION_POLICY, runCompletion } from './completion';
import { inheritedHistory, resolveInjected, threadChain } from './history';

export interface SliceDependencies {
  store: ConversationStore;
  model: ModelProvider;
  tools: readonly Tool[];
  /** Delivers a message to a thread's input queue; handed to tools as `ctx.send`. */
  send(message: InputMessage): Promise<void>;
  /** Receives live events; must not throw. */
  emit(event: ThreadEvent): void;
  /** Replaces the default system prompt (the thread-id suffix is always added). */
  systemPrompt?: string;
  completionPolicy?: Partial<CompletionPolicy>;
  /** How often the slice heartbeats (default 1 s); heartbeats carry crash detection and cancellation. */
  heartbeatIntervalMs?: number;
}

function eventsForAppended(threadId: string, entries: readonly StoredItem[]): ThreadEvent[] {
  const events: ThreadEvent[] = [];
  for (const { item } of entries) {
    if (item.kind === 'user') {
      const text = item.text.startsWith(INTERRUPT_PREFIX) ? item.text.slice(INTERRUPT_PREFIX.length) : item.text;
      events.push({ threadId, type: 'user_input', text });
    } else if (item.kind === 'tool_result') {
      events.push({ threadId, type: 'tool_result', toolCallId: item.id, text: firstText(item.content) });
    }
  }
  return events;
}

const shorten = (s: string, n = 200) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function createSliceActivities(deps: SliceDependencies) {
  for (const t of deps.tools) {
    if (BUILTIN_TOOL_NAMES.has(t.name)) throw new TypeError(`tool name '${t.name}' is reserved for a built-in runtime tool`);
  }
  const tools = new Map(deps.tools.map((t) => [t.name, t]));
  const policy: CompletionPolicy = { ...DEFAULT_COMPLETION_POLICY, ...deps.completionPolicy };
  const emit = (e: ThreadEvent) => {
    try {
      deps.emit(e);
    } catch {
      // A broken listener must not fail a slice.
    }
  };

  const toolContext = (threadId: string, rootThreadId: string) => (toolCallId: string, toolName: string): ToolContext => ({
    threadId,
    rootThreadId,
    toolCallId,
    toolName,
    send: deps.send,
  });

  /** Starts an async tool; failures become an error result for the same call (reference spec §2.7). */
  async function dispatch(threadId: string, rootThreadId: string, call: AsyncCall): Promise<InputMessage[]> {
    if (BUILTIN_TOOL_NAMES.has(call.name)) return []; // carried out by the workflow
    const tool = tools.get(call.name);
    try {
      if (!tool) throw new Error(`tool '${call.name}' is no longer registered on this worker`);
      await tool.execute(call.args, toolContext(threadId, rootThreadId)(call.id, call.name));
      return [];
    } catch (e) {
      emit({ threadId, type: 'info', text: `Error: ${e instanceof Error ? e.message : String(e)}` });
      return [toolResult({ threadId, toolCallId: call.id }, TOOL_CALL_FAILED, { id: messageIds.toolError(call.id) })];
    }
  }

  /** A retry of a slice that already committed: dispatch again (tools are idempotent per call id) and return. */
  async function replayCommitted(input: SliceInput, prior: SliceResult): Promise<SliceResult> {
    if (!prior.pendingCall) return prior;
    const last = (await deps.store.load(input.threadId, prior.length - 1, prior.length))[0]?.item;
    if (last?.kind !== 'tool_call' || last.id !== prior.pendingCall.id) return prior;
    const record = await deps.store.getThread(input.threadId);
    const call = { ...prior.pendingCall, args: last.args };
    const followUps = await dispatch(input.threadId, record?.rootThreadId ?? input.threadId, call);
    return { ...prior, followUps: [...prior.followUps, ...followUps] };
  }

  async function runSlice(input: SliceInput): Promise<SliceResult> {
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
    const committed = await deps.store.load(threadId);
    if (committed.length !== input.expectedLength) {
      throw ApplicationFailure.nonRetryable(
        new CommitConflictError(threadId, input.expectedLength, committed.length).message,
        'CommitConflictError',
      );
    }
    const chain = await threadChain(deps.store, threadId);
    const inherited = await inheritedHistory(deps.store, chain);
    const before = [...inherited, ...committed].map((s) => s.item);
    const append = resolveInjected(before, input.append);

    const ctx = Context.current();
    // No heartbeat at the start: most slices finish well within the interval, and each heartbeat is a server call.
    const heartbeat = setInterval(() => ctx.heartbeat(), deps.heartbeatIntervalMs ?? 1000);
    try {
      for (const e of eventsForAppended(threadId, append)) emit(e);
      emit({ threadId, type: 'status', status: 'running' });
      emit({ threadId, type: 'completion_started', sliceId });
      const out = await runCompletion({
        threadId,
        sliceId,
        system: (deps.systemPrompt ?? DEFAULT_SYSTEM_PROMPT) + systemPromptSuffix(threadId, record.rootThreadId),
        history: [...before, ...append.map((s) => s.item)],
        tools,
        model: deps.model,
        policy,
        signal: ctx.cancellationSignal,
        emit,
        toolContext: toolContext(threadId, record.rootThreadId),
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
      const items = [...append, ...out.buffer.flushed];
      const lastText = [...items].reverse().find((s) => s.item.kind === 'assistant')?.item;
      const result: SliceResult = {
        sliceId,
        length: committed.length + items.length,
        pendingCall: out.asyncCall ? { id: out.asyncCall.id, name: out.asyncCall.name, passive: out.asyncCall.passive } : null,
        answeredCallIds: out.answeredCallIds,
        followUps: [],
        interrupted: out.interrupted,
      };
      if (out.usage) result.usage = out.usage;
      if (lastText?.kind === 'assistant') result.lastText = shorten(lastText.text);
      if (out.error) result.error = out.error;
      if (out.action) result.action = out.action;
      if (out.cancelledSubscriptions.length > 0) result.cancelledSubscriptions = out.cancelledSubscriptions;

      const outcome = await deps.store.commit({ threadId, sliceId, expectedLength: input.expectedLength, items, result });
      if (outcome === 'duplicate') {
        // A zombie attempt of this slice committed first: its result is the one that counts.
        return replayCommitted(input, (await deps.store.findSlice(threadId, sliceId))!);
      }
      if (out.action?.type === 'close') await deps.store.markClosed(threadId);
      emit({ threadId, type: 'completion_finished', sliceId, usage: out.usage });
      if (out.asyncCall) result.followUps = await dispatch(threadId, record.rootThreadId, out.asyncCall);
      emit({ threadId, type: 'status', status: result.pendingCall ? 'waiting_tool' : 'idle' });
      return result;
    } finally {
      clearInterval(heartbeat);
    }
  }

  return { runSlice };
}

export type SliceActivities = ReturnType<typeof createSliceActivities>;
