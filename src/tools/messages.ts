/** Builders for the messages tools and clients put into a thread's input queue. */
import { randomUUID } from 'node:crypto';
import { resultInput } from '../core/inputs';
import type { DisplaySegment, InputMessage, ToolResultContent } from '../core/types';

/** The call a message answers: a {@link ToolContext} or the same fields by hand. */
export interface CallRef {
  threadId: string;
  toolCallId: string;
}

/** Options of {@link toolResult}. */
export interface ToolResultOptions {
  /**
   * The call started a subscription; later `subscriptionEvent`s for it are routed to the thread.
   * @default false
   */
  subscription?: boolean;
  /** How a UI shows the result (text, diff, image segments); the model reads `content`. @default none */
  displayAs?: DisplaySegment[];
  /**
   * Dedup id: a resent result with the same id is processed once.
   * @default one derived from the tool call id
   */
  id?: string;
}

/**
 * The result of a tool call, as an input for its thread: send it from the tool (`ctx.send`), or deliver it from
 * anywhere with {@link AgentClient.deliver} (then `call` is `{ threadId, toolCallId }`).
 *
 * @example
 * ```ts
 * execute(args, ctx) {
 *   void runBuild(args).then(
 *     (log) => ctx.send(toolResult(ctx, log)),
 *     (e) => ctx.send(toolResult(ctx, `Error: ${e.message}`)),
 *   );
 * }
 * ```
 */
export function toolResult(
  call: CallRef,
  content: string | ToolResultContent[],
  options: ToolResultOptions = {},
): InputMessage {
  const msg = resultInput(call.threadId, call.toolCallId, content, options.id);
  if (options.subscription) msg.subscription = true;
  if (options.displayAs) msg.displayAs = options.displayAs;
  return msg;
}

/** The first result of a call that starts a subscription. */
export function subscriptionStart(
  call: CallRef,
  content: string | ToolResultContent[],
  options: Omit<ToolResultOptions, 'subscription'> = {},
): InputMessage {
  return toolResult(call, content, { ...options, subscription: true });
}

/** A later event of a subscription. Events are never deduplicated: each gets a fresh id. */
export function subscriptionEvent(
  call: CallRef,
  content: string | ToolResultContent[],
  options: { associative?: boolean; final?: boolean } = {},
): InputMessage {
  return {
    ...resultInput(call.threadId, call.toolCallId, content, randomUUID()),
    synthetic: {
      type: 'subscription_event',
      toolCallId: call.toolCallId,
      associative: options.associative ?? false,
      final: options.final ?? false,
    },
  };
}

/** A user's text. */
export function userText(threadId: string, text: string, id: string = randomUUID()): InputMessage {
  return { id, threadId, content: { type: 'text', text } };
}
