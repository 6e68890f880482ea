/**
 * Model-visible texts that must match the reference runtime exactly (docs/semantics.md §18).
 * Tests compare committed histories against these, so change them only where the reference runtime changes them.
 */

export const INTERRUPTED_RESULT = 'Tool call interrupted by user';

export const INTERRUPT_PREFIX = '<interrupt>';

/** The name of the synthetic tool call that carries events into a thread's history. */
export const INJECTED_TOOL_NAME = 'receive_event__injected';

export const INJECTED_TOOL_ERROR =
  'Error: you cannot directly invoke receive_event__injected, invocations will automatically be injected when events arrive.';

export function unknownToolError(name: string): string {
  return `Error: tool '${name}' does not exist`;
}

/** Sent to the thread when a tool's `execute` throws (docs/semantics.md §3). */
export const TOOL_CALL_FAILED = 'Error: Tool call failed';

/**
 * The result a tool call gets when the slice that carried its real result failed on every attempt and the batch was
 * set aside (ours; the reference has no such case): the model hears why instead of waiting on a call forever.
 */
export const setAsideResult = (reason: string): string =>
  `Error: the result of this tool call could not be processed and was set aside (${reason.length > 300 ? `${reason.slice(0, 299)}…` : reason})`;

export function invalidArgumentsError(name: string, reason: string): string {
  return `Error: invalid arguments for tool '${name}': ${reason}`;
}

export function invalidJsonArgumentsError(name: string, reason: string): string {
  return `Error: the arguments for tool '${name}' are not valid JSON: ${reason}`;
}

export function systemPromptSuffix(threadId: string, rootThreadId: string): string {
  return `\n\nYour current thread ID is \`${threadId}\`. The root thread ID is \`${rootThreadId}\`.`;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are Infinity, an agent that works through tools. Tools run asynchronously: after you call one, ' +
  'its result arrives later as the next message. Call at most one tool per turn.';

/** The system prompt a thread's slices send: the worker's (default {@link DEFAULT_SYSTEM_PROMPT}) and the thread's ids. */
export function threadSystemPrompt(systemPrompt: string | undefined, threadId: string, rootThreadId: string): string {
  return (systemPrompt ?? DEFAULT_SYSTEM_PROMPT) + systemPromptSuffix(threadId, rootThreadId);
}

// ---- Compaction (docs/semantics.md §12) ----

/** The synthetic call that opens a compaction thread. */
export const COMPACTION_TOOL_NAME = '__harness_begin_compaction__';

export function compactionInstructions(childThreadId: string): string {
  return (
    'This tool call was synthetically injected by the harness. You are now INSIDE a compaction thread. You can see the full ' +
    'conversation history inherited from your parent thread, including all ancestor thread context. Summarize ALL of this ' +
    'content into a concise but comprehensive summary that preserves: all important context, decisions made, current task ' +
    'progress, relevant code changes and file paths, and any pending work. Then call close_thread with your thread ID ' +
    `(${childThreadId}) and include the summary in report_to_parent.`
  );
}

/** The history item that stands for everything a summary covers. */
export function compactedSummary(summary: string): string {
  return `[Compacted conversation summary]\n${summary}`;
}

export const COMPACTION_COMPLETE = 'Compaction complete';

export const AUTO_COMPACTION_TRIGGERED = '✦ Auto-compaction triggered (context > 75%)';

/** Stands in for an image in a tool result when the model cannot take images (docs/semantics.md §17). */
export const IMAGE_OMITTED = '[image omitted: the current model does not support image inputs]';
