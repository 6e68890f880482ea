/**
 * Model-visible texts that must match the reference runtime exactly (reference spec §2.4, §2.5, §5.2).
 * Tests compare committed histories against these, so change them only together with the spec.
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

/** Sent to the thread when a tool's `execute` throws (reference spec §2.7). */
export const TOOL_CALL_FAILED = 'Error: Tool call failed';

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
