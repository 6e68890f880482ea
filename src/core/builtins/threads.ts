/**
 * The thread family of built-in tools: `spawn_thread`, `report_to_parent`, `close_thread`, `send_message_to_child`.
 * Their specs, the validation of a call and every text the model reads about them, which must match the original
 * runtime word for word (docs/semantics.md; tests compare whole histories against these). The workflow turns the
 * actions into Temporal commands (src/workflows/runtime-actions.ts).
 */
import { type BuiltinToolSpec, type BuiltinValidator, objectSchema, type SpawnableAgent, str } from './spec';

export const THREAD_TOOLS: readonly BuiltinToolSpec[] = [
  {
    name: 'spawn_thread',
    description:
      'Spawn a child thread to work on a sub-task in parallel. The child inherits your current context and gets its own ' +
      'thread ID; you are notified automatically when it reports. Returns the child thread ID.',
    parameters: objectSchema(
      {
        instructions: {
          type: 'string',
          description: 'What the child must do. Also state what you (the parent) will do in the meantime.',
        },
        child_of: {
          type: 'array',
          items: { type: 'string' },
          description: 'The full thread stack from the root thread to the current thread, e.g. ["R"] or ["R", "A"].',
        },
      },
      ['instructions', 'child_of'],
    ),
    sync: true,
    passive: false,
  },
  {
    name: 'report_to_parent',
    description:
      'Send a report to the parent thread. The parent sees it as an event tied to the call that spawned you.',
    parameters: objectSchema({ report: { type: 'string' } }, ['report']),
    sync: false,
    passive: false,
  },
  {
    name: 'close_thread',
    description:
      'Permanently shut down the specified thread, which must be the current thread. Cancel its subscriptions first. ' +
      'Optionally include a final report for the parent.',
    parameters: objectSchema({ thread_id: { type: 'string' }, report_to_parent: { type: 'string' } }, ['thread_id']),
    sync: false,
    passive: false,
  },
  {
    name: 'send_message_to_child',
    description: 'Send a message to one of your direct child threads.',
    parameters: objectSchema({ thread_id: { type: 'string' }, message: { type: 'string' } }, ['thread_id', 'message']),
    sync: false,
    passive: false,
  },
];

export const validateThreadTool: BuiltinValidator = async (name, args, callId, ctx) => {
  switch (name) {
    case 'spawn_thread': {
      const childOf =
        Array.isArray(args.child_of) && args.child_of.every((x) => typeof x === 'string')
          ? (args.child_of as string[])
          : [];
      if (childOf.length !== ctx.stack.length || childOf.some((x, i) => x !== ctx.stack[i])) {
        return { result: childOfMismatch(childOf, ctx.stack, ctx.threadId) };
      }
      const instructions = str(args.instructions);
      if (instructions === undefined) return { result: 'Error: instructions is required' };
      // Only where the thread's agent may spawn others is `agent` an argument (issue 40); elsewhere it is ignored, as
      // any argument the schema does not name.
      const spawnable = ctx.spawnable ?? [];
      if (spawnable.length > 0 && args.agent !== undefined) {
        const agent = str(args.agent);
        if (agent === undefined || !spawnable.some((a) => a.name === agent))
          return { result: unknownAgent(args.agent, spawnable) };
        return { action: { type: 'spawn', callId, instructions, agent } };
      }
      return { action: { type: 'spawn', callId, instructions } };
    }
    case 'report_to_parent': {
      const report = str(args.report);
      if (report === undefined) return { result: REPORT_REQUIRED };
      if (!ctx.parentThreadId) return { result: NO_PARENT };
      return { action: { type: 'report', callId, report } };
    }
    case 'close_thread': {
      const given = str(args.thread_id);
      if (given === undefined) return { result: THREAD_ID_REQUIRED };
      if (given !== ctx.threadId) return { result: closeMismatch(given, ctx.threadId) };
      if (ctx.kind === 'root' || !ctx.parentThreadId) return { result: CANNOT_CLOSE_ROOT };
      const report = str(args.report_to_parent);
      return { action: report === undefined ? { type: 'close', callId } : { type: 'close', callId, report } };
    }
    case 'send_message_to_child': {
      const child = str(args.thread_id);
      if (child === undefined) return { result: THREAD_ID_REQUIRED };
      const message = str(args.message);
      if (message === undefined) return { result: MESSAGE_REQUIRED };
      const parent = await ctx.parentOf(child);
      if (!parent) return { result: CHILD_NOT_FOUND };
      if (parent !== ctx.threadId) return { result: notAChild(child, ctx.threadId) };
      return { action: { type: 'message_child', callId, childThreadId: child, message } };
    }
    default:
      throw new Error(`not a thread tool: ${name}`);
  }
};

// ---- What the model reads ----

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
export const notAChild = (child: string, current: string) =>
  `Error: thread ${child} is not a child of the current thread ${current}`;
export const messageFromParent = (message: string) => `Message from parent thread: ${message}`;
export const MESSAGE_SENT = 'Message sent to child thread.';

export const EVENT_CHILD_SPAWN_INSTRUCTIONS = 'Spawning thread to process incoming event.';
export function eventChildSeed(childId: string, parentId: string): string {
  return (
    `You are now INSIDE the thread for processing the single event above. Your thread ID is ${childId}, the parent which is ` +
    `still subscribing is ${parentId}. Process the single subscription event above, report to the parent if appropriate, then ` +
    `close the thread after processing this event. Your outputs are NOT VISIBLE to the user, if you want to show them something, ` +
    `send a report to your parent.`
  );
}

/**
 * `spawn_thread` for a thread whose agent may spawn other agents (issue 40): the same tool with an optional `agent`,
 * an enum of those agents, each described. Without any, the original runtime's spec, word for word.
 */
export function spawnThreadSpec(spawnable: readonly SpawnableAgent[]): BuiltinToolSpec {
  const base = THREAD_TOOLS[0]!;
  if (spawnable.length === 0) return base;
  const params = base.parameters as { properties: Record<string, unknown>; required: string[] };
  return {
    ...base,
    parameters: objectSchema(
      {
        ...params.properties,
        agent: {
          type: 'string',
          enum: spawnable.map((a) => a.name),
          description:
            'Which agent runs the child; leave it out for a child like you. The agents:\n' +
            spawnable.map((a) => `- ${a.name}: ${a.description}`).join('\n'),
        },
      },
      params.required,
    ),
  };
}

/** The model named an agent it may not spawn: what it reads. */
export function unknownAgent(given: unknown, spawnable: readonly SpawnableAgent[]): string {
  const shown = typeof given === 'string' ? given.slice(0, 80) : JSON.stringify(given)?.slice(0, 80);
  return `Error: unknown agent '${shown}'. Agents you may spawn: ${spawnable.map((a) => a.name).join(', ')}`;
}
