/**
 * The `runSlice` activity (docs/architecture.md, "The slice protocol"): load → one completion → commit atomically → dispatch at most one async tool
 * call. Its input and output stay small; the conversation moves only between this process and the store. The phases
 * are in slice-attempt.ts, the result in slice-result.ts, tool dispatch in dispatch.ts, a committed slice's retry in
 * replay.ts, what the worker gives the slices in slice-dependencies.ts.
 */
import type { RewindInput, SliceInput, SlicePeek, SliceResult } from '../core/slice-protocol';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { DEFAULT_COMPLETION_POLICY } from './completion';
import { createDispatch, guardedEmit, treeTools } from './dispatch';
import { sliceAttempt, type SliceRuntime } from './slice-attempt';
import type { SliceDependencies } from './slice-dependencies';
import { sliceEntryPoints } from './slice-entry';
import { type SliceControl, SliceJobs } from './slice-jobs';
import type { ToolCallKind } from './slice-metrics';
import { createRewind } from './rewind';
import { ownThreadOnly } from './own-thread';

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
    peekSlice: ownThreadOnly((threadId: string, _sliceId: string) => threadId, peekSlice),
    // A rewind (issue 28 §2) tells the archived pending call's tool, as an interrupting user text does.
    rewindThread: ownThreadOnly(
      (input: RewindInput) => input.threadId,
      createRewind(deps.store, (threadId, callId) => runtime.io.notify((l) => l.callCancelled?.(threadId, callId))),
    ),
  };
}

export type SliceActivities = ReturnType<typeof createSliceActivities>;
