/**
 * The slice's half of the runtime tools (reference spec §3): validate the call with the reference's error texts,
 * answer the ones that need no workflow command (`cancel_subscription`, validation errors) inline, and turn the
 * rest into a {@link RuntimeAction} for the workflow.
 */
import type { RuntimeAction } from '../core/slice-protocol';
import * as T from '../core/texts';
import type { ThreadKind } from '../core/types';
import { zonedInstant } from './time';

export interface RuntimeToolContext {
  threadId: string;
  kind: ThreadKind;
  /** Thread ids from the root to this thread. */
  stack: readonly string[];
  parentThreadId?: string;
  subscriptions: ReadonlySet<string>;
  /** The parent of a thread according to the store, or null when the thread is unknown. */
  parentOf(threadId: string): Promise<string | undefined | null>;
  now(): number;
}

export type RuntimeOutcome =
  | { result: string; cancelledSubscription?: string }
  | { action: RuntimeAction };

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export async function runRuntimeTool(
  name: string,
  rawArgs: unknown,
  callId: string,
  ctx: RuntimeToolContext,
): Promise<RuntimeOutcome> {
  const args = (typeof rawArgs === 'object' && rawArgs !== null ? rawArgs : {}) as Record<string, unknown>;
  switch (name) {
    case 'spawn_thread': {
      const childOf = Array.isArray(args.child_of) && args.child_of.every((x) => typeof x === 'string') ? (args.child_of as string[]) : [];
      if (childOf.length !== ctx.stack.length || childOf.some((x, i) => x !== ctx.stack[i])) {
        return { result: T.childOfMismatch(childOf, ctx.stack, ctx.threadId) };
      }
      const instructions = str(args.instructions);
      if (instructions === undefined) return { result: 'Error: instructions is required' };
      return { action: { type: 'spawn', callId, instructions } };
    }
    case 'report_to_parent': {
      const report = str(args.report);
      if (report === undefined) return { result: T.REPORT_REQUIRED };
      if (!ctx.parentThreadId) return { result: T.NO_PARENT };
      return { action: { type: 'report', callId, report } };
    }
    case 'close_thread': {
      const given = str(args.thread_id);
      if (given === undefined) return { result: T.THREAD_ID_REQUIRED };
      if (given !== ctx.threadId) return { result: T.closeMismatch(given, ctx.threadId) };
      if (ctx.kind === 'root' || !ctx.parentThreadId) return { result: T.CANNOT_CLOSE_ROOT };
      const report = str(args.report_to_parent);
      return { action: report === undefined ? { type: 'close', callId } : { type: 'close', callId, report } };
    }
    case 'send_message_to_child': {
      const child = str(args.thread_id);
      if (child === undefined) return { result: T.THREAD_ID_REQUIRED };
      const message = str(args.message);
      if (message === undefined) return { result: T.MESSAGE_REQUIRED };
      const parent = await ctx.parentOf(child);
      if (!parent) return { result: T.CHILD_NOT_FOUND };
      if (parent !== ctx.threadId) return { result: T.notAChild(child, ctx.threadId) };
      return { action: { type: 'message_child', callId, childThreadId: child, message } };
    }
    case 'cancel_subscription': {
      const id = str(args.tool_call_id);
      if (id === undefined) return { result: T.TOOL_CALL_ID_REQUIRED };
      if (!ctx.subscriptions.has(id)) return { result: T.noSubscription(id) };
      return { result: T.subscriptionCancelled(id), cancelledSubscription: id };
    }
    case 'sleep': {
      const seconds = typeof args.seconds === 'number' && Number.isFinite(args.seconds) ? args.seconds : undefined;
      if (seconds === undefined) return { result: 'Error: seconds is required' };
      return { action: { type: 'sleep', callId, wakeAtMs: ctx.now() + Math.max(0, seconds) * 1000, text: T.slept(seconds) } };
    }
    case 'sleep_until': {
      const date = str(args.date);
      const time = str(args.time);
      if (date === undefined || time === undefined) return { result: 'Error: date and time are required' };
      const tz = str(args.timezone) ?? 'UTC';
      const at = zonedInstant(date, time, tz);
      if ('error' in at) return { result: at.error };
      const now = ctx.now();
      if (at.ms <= now) return { action: { type: 'sleep', callId, wakeAtMs: now, text: T.wokeInPast(date, time) } };
      return { action: { type: 'sleep', callId, wakeAtMs: at.ms, text: T.wokeAt(date, time, tz) } };
    }
    default:
      throw new Error(`not a runtime tool: ${name}`);
  }
}
