/**
 * What a slice hands to tools and tells the world around it: the context each tool call gets, the dispatch of the one
 * async call a slice may end with (after its commit), and the lifecycle notices for RAP servers. Every part here is
 * best effort towards the slice: a failing tool, listener or lifecycle hook never fails it.
 */
import { messageIds } from '../core/ids';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { TOOL_CALL_FAILED } from '../core/texts';
import type { InputMessage, ThreadEvent } from '../core/types';
import { toolResult } from '../tools/messages';
import type { Tool, ToolContext, ToolLifecycle, ToolSource } from '../tools/tool';
import type { AsyncCall } from './completion';

/** The part of `SliceDependencies` this module uses; the worker's own object is passed, and read at each call. */
export interface DispatchDependencies {
  /** Delivers a message to a thread's input queue; handed to tools as `ctx.send`. */
  send(message: InputMessage, from?: { toolName: string }): Promise<void>;
  /** Told about interrupted calls, cancelled subscriptions and closed threads. */
  lifecycle?: readonly ToolLifecycle[];
}

/** A lifecycle notice: one call on one listener, which may or may not return a promise. */
export type LifecycleNotice = (l: ToolLifecycle) => Promise<void> | void | undefined;

/** The tool-facing side of a worker's slices (`createDispatch`). */
export interface SliceDispatch {
  /** The context of one tool call in a thread, curried so the completion can make one per call. */
  toolContext(
    threadId: string,
    rootThreadId: string,
    ancestors?: string[],
    userId?: string,
  ): (toolCallId: string, toolName: string) => ToolContext;
  /** Starts an async tool call; a failure becomes the follow-up error result for the same call. */
  dispatch(
    threadId: string,
    rootThreadId: string,
    call: AsyncCall,
    ancestors: string[],
    userId?: string,
  ): Promise<InputMessage[]>;
  /** Tells every lifecycle listener, fire and forget. */
  notify(fn: LifecycleNotice): void;
}

/** The worker's live-event listener (`SliceDependencies.emit`), guarded so that a broken one cannot fail a slice. */
export function guardedEmit(listener: { emit(event: ThreadEvent): void }): (event: ThreadEvent) => void {
  return (e) => {
    try {
      listener.emit(e);
    } catch {
      // A broken listener must not fail a slice.
    }
  };
}

/**
 * The tool context, async dispatch and lifecycle notices of the slices of one worker. `emit` must already be guarded
 * (`guardedEmit`): a dispatch failure is reported through it.
 */
/** The tools of one agent tree, by name: the worker's own, then what the sources offer the tree. */
export type TreeTools = (rootThreadId: string) => Promise<ReadonlyMap<string, Tool>>;

/**
 * The worker's tools and the sources' (RAP toolsets, fetched per tree). A source's tool whose name the worker's tools
 * or the built-in tools already have is left out, as is a second source's tool of the same name.
 */
export function treeTools(tools: ReadonlyMap<string, Tool>, sources: readonly ToolSource[]): TreeTools {
  if (sources.length === 0) return async () => tools;
  return async (rootThreadId) => {
    const all = new Map(tools);
    for (const source of sources) {
      for (const t of await source.toolsFor(rootThreadId))
        if (!all.has(t.name) && !BUILTIN_TOOL_NAMES.has(t.name)) all.set(t.name, t);
    }
    return all;
  };
}

export function createDispatch(
  deps: DispatchDependencies,
  toolsFor: TreeTools,
  emit: (event: ThreadEvent) => void,
): SliceDispatch {
  /** Fire and forget: a notice never delays or fails a slice. */
  const notify = (fn: LifecycleNotice) => {
    for (const l of deps.lifecycle ?? []) {
      try {
        void Promise.resolve(fn(l)).catch(() => undefined);
      } catch {
        // ignored: best effort
      }
    }
  };

  const toolContext =
    (threadId: string, rootThreadId: string, ancestors: string[] = [], userId?: string) =>
    (toolCallId: string, toolName: string): ToolContext => ({
      threadId,
      rootThreadId,
      ancestors,
      ...(userId !== undefined && { userId }),
      toolCallId,
      toolName,
      // The sending tool's name rides along for the Temporal UI (the readable signal payload; decision 62).
      send: (message) => deps.send(message, { toolName }),
    });

  /** Starts an async tool; failures become an error result for the same call (docs/semantics.md §3). */
  async function dispatch(
    threadId: string,
    rootThreadId: string,
    call: AsyncCall,
    ancestors: string[],
    userId?: string,
  ): Promise<InputMessage[]> {
    if (BUILTIN_TOOL_NAMES.has(call.name)) return []; // carried out by the workflow
    const tool = (await toolsFor(rootThreadId)).get(call.name);
    try {
      if (!tool) throw new Error(`tool '${call.name}' is no longer registered on this worker`);
      await tool.execute(call.args, toolContext(threadId, rootThreadId, ancestors, userId)(call.id, call.name));
      return [];
    } catch (e) {
      emit({ threadId, type: 'info', text: `Error: ${e instanceof Error ? e.message : String(e)}` });
      return [toolResult({ threadId, toolCallId: call.id }, TOOL_CALL_FAILED, { id: messageIds.toolError(call.id) })];
    }
  }

  return { toolContext, dispatch, notify };
}
