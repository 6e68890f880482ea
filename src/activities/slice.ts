/**
 * The `runSlice` activity (docs/architecture.md, "The slice protocol"): load → one completion → commit atomically → dispatch at most one async tool
 * call. Its input and output stay small; the conversation moves only between this process and the store. The phases
 * are in slice-attempt.ts, the result in slice-result.ts, tool dispatch in dispatch.ts, a committed slice's retry in
 * replay.ts.
 */
import type { ProviderLimits } from '../core/capacity';
import type { SliceInput, SlicePeek, SliceResult } from '../core/slice-protocol';
import type { InputMessage, ThreadEvent } from '../core/types';
import type { ModelProvider } from '../model/provider';
import type { ConversationStore } from '../store/conversation-store';
import type { Tool, ToolLifecycle, ToolSource } from '../tools/tool';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { type CompletionPolicy, DEFAULT_COMPLETION_POLICY } from './completion';
import { createDispatch, guardedEmit, treeTools } from './dispatch';
import { sliceAttempt, type SliceRuntime } from './slice-attempt';
import { sliceEntryPoints } from './slice-entry';
import { type SliceControl, SliceJobs } from './slice-jobs';
import type { SliceMetrics, ToolCallKind } from './slice-metrics';
import type { SliceTracing } from './slice-tracing';
import type { PriceTable } from '../model/prices';

export interface SliceDependencies {
  store: ConversationStore;
  model: ModelProvider;
  tools: readonly Tool[];
  /** Tools per agent tree, beside `tools` (RAP toolsets); a name `tools` or a built-in has is not taken from them. */
  toolSources?: readonly ToolSource[];
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
  /**
   * Model prices for money budgets, before the shipped ones (`src/model/prices.ts`).
   * @default DEFAULT_PRICES only
   */
  prices?: PriceTable;
  /**
   * Provider limits shared by every worker on the same store (issue 27 §2; docs/budgets.md): requests and tokens per
   * minute and concurrency of this worker's model, under `limits.key`.
   * @default none (every slice calls its provider at once)
   */
  limits?: ProviderLimits;
}

/**
 * The slice activities of one worker (slice-entry.ts), over its store, model and tools. Checks once what every slice
 * relies on (no tool takes a built-in's name) and derives what every attempt shares (slice-attempt.ts).
 */
export function createSliceActivities(deps: SliceDependencies) {
  for (const t of deps.tools) {
    if (BUILTIN_TOOL_NAMES.has(t.name))
      throw new TypeError(`tool name '${t.name}' is reserved for a built-in runtime tool`);
  }
  const toolsFor = treeTools(new Map(deps.tools.map((t) => [t.name, t])), deps.toolSources ?? []);
  const emit = guardedEmit(deps);
  const runtime: SliceRuntime = {
    deps,
    toolsFor,
    policy: { ...DEFAULT_COMPLETION_POLICY, ...deps.completionPolicy },
    compaction: { threshold: deps.compactionThreshold ?? 0.75, window: deps.model.contextWindow },
    emit,
    io: createDispatch(deps, toolsFor, emit),
    classify:
      (tools) =>
      (name: string): ToolCallKind => {
        if (BUILTIN_TOOL_NAMES.has(name)) return 'builtin';
        const tool = tools.get(name);
        return tool ? (tool.sync ? 'sync' : 'async') : 'unknown';
      },
  };
  const metrics = deps.metrics;

  /** One attempt of a slice, counted (slice-metrics.ts) and traced (slice-tracing.ts). */
  async function runSlice(input: SliceInput, control: SliceControl): Promise<SliceResult> {
    metrics?.started(input.kind);
    const attempt = () => sliceAttempt(runtime, input, control, performance.now());
    try {
      return await (deps.tracing ? deps.tracing.run(input, attempt) : attempt());
    } catch (e) {
      metrics?.failed(input.kind, e);
      throw e;
    }
  }

  /**
   * Release 0.6 (decision 67), a local activity before a local slice of several queued inputs: whether the slice
   * already committed (a workflow task that ran it failed afterwards), and with which inputs, so the task's retry takes
   * the same ones.
   */
  async function peekSlice(threadId: string, sliceId: string): Promise<SlicePeek> {
    const prior = await deps.store.findSlice(threadId, sliceId);
    if (!prior) return { committed: false };
    return prior.inputs ? { committed: true, inputs: prior.inputs } : { committed: true };
  }

  return {
    ...sliceEntryPoints(runSlice, emit, {
      jobs: deps.jobs ?? new SliceJobs(),
      handoffQueue: deps.handoffQueue,
      heartbeatIntervalMs: deps.heartbeatIntervalMs,
    }),
    peekSlice,
  };
}

export type SliceActivities = ReturnType<typeof createSliceActivities>;
