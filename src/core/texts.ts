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

// ---- Built-in runtime tools (reference spec §3) ----

export function childOfMismatch(childOf: readonly string[], stack: readonly string[], threadId: string): string {
  const list = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;
  return (
    `Error: child_of ${list(childOf)} does not match the actual thread stack ${list(stack)}. You may be confused and think ` +
    `you are in the parent thread, but you are not. You are in thread ${threadId}. Do NOT spawn threads — focus on your assigned task.`
  );
}

export function childSeed(childId: string, instructions: string): string {
  return (
    `You are now INSIDE the thread that you requested to create. Your thread ID is ${childId}. Your next task is to exactly ` +
    `follow these instructions: ${instructions}\n. Start by repeating to yourself the instructions, ignoring thinking from the ` +
    `parent context. Make sure to not be confused by the parent context. If the parent was planning to spawn more threads, you should not.`
  );
}

export function childSpawned(childId: string): string {
  return (
    `Child thread is successfully spawned and has ID: ${childId}. You will be notified automatically when the child has ` +
    `anything to report. Make sure that you **do not** do the task assigned to the child thread.`
  );
}

export const REPORT_REQUIRED = 'Error: report is required';
export const NO_PARENT = 'Error: No parent thread found — this is a root thread';
export const REPORT_SENT = 'Report sent to parent thread.';
export const reportFromChild = (report: string) => `Report from child thread: ${report}`;
export const reportFromEventChild = (report: string) =>
  `Report from temporary child thread created to process a subscription event:\n${report}`;

export const THREAD_ID_REQUIRED = 'Error: thread_id is required';
export const closeMismatch = (given: string, current: string) =>
  `Error: the provided thread ID to close ${given} does not match the current thread ID ${current}`;
export const CANNOT_CLOSE_ROOT = 'Error: cannot close the root thread. Only child threads can be closed.';
export const eventChildClosed = (subscriptionCallId: string, threadId: string, report: string) =>
  `An event from your subscription ${subscriptionCallId} was processed by a child thread ${threadId}. The subscription remains active. Report from the child:\n${report}`;
export const childShutDown = (threadId: string, report?: string) =>
  report === undefined
    ? `Child thread with ID ${threadId} has shut down`
    : `Child thread with ID ${threadId} has shut down. Report from child thread: ${report}`;

export const MESSAGE_REQUIRED = 'Error: message is required';
export const CHILD_NOT_FOUND = 'Error: Child thread not found or has no parent';
export const notAChild = (child: string, current: string) => `Error: thread ${child} is not a child of the current thread ${current}`;
export const messageFromParent = (message: string) => `Message from parent thread: ${message}`;
export const MESSAGE_SENT = 'Message sent to child thread.';

export const TOOL_CALL_ID_REQUIRED = 'Error: tool_call_id is required';
export const noSubscription = (id: string) => `Error: no active subscription found for tool call ID '${id}'`;
export const subscriptionCancelled = (id: string) => `Subscription '${id}' cancelled successfully.`;

/** JavaScript prints integral numbers without `.0`, as the reference does. */
export const slept = (seconds: number) => `Slept for ${seconds} seconds`;
export const wokeInPast = (date: string, time: string) => `Target time ${date} ${time} is in the past. Waking immediately.`;
export const wokeAt = (date: string, time: string, tz: string) => `Woke up at target time: ${date} ${time} (${tz})`;

export const EVENT_CHILD_SPAWN_INSTRUCTIONS = 'Spawning thread to process incoming event.';
export function eventChildSeed(childId: string, parentId: string): string {
  return (
    `You are now INSIDE the thread for processing the single event above. Your thread ID is ${childId}, the parent which is ` +
    `still subscribing is ${parentId}. Process the single subscription event above, report to the parent if appropriate, then ` +
    `close the thread after processing this event. Your outputs are NOT VISIBLE to the user, if you want to show them something, ` +
    `send a report to your parent.`
  );
}

// ---- Compaction (reference spec §6) ----

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

/** Stands in for an image in a tool result when the model cannot take images (reference spec §1.4). */
export const IMAGE_OMITTED = '[image omitted: the current model does not support image inputs]';
