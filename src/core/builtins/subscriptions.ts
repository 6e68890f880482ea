/**
 * The subscription family of built-in tools: `cancel_subscription`, answered inline by the slice. A subscription is
 * any tool call whose tool keeps sending events (docs/semantics.md); cancelling it revokes its callback URL
 * (decision 39). Texts as the original runtime words them.
 */
import { type BuiltinToolSpec, type BuiltinValidator, objectSchema, str } from './spec';

export const SUBSCRIPTION_TOOLS: readonly BuiltinToolSpec[] = [
  {
    name: 'cancel_subscription',
    description: 'Cancel an active subscription started by one of your earlier tool calls.',
    parameters: objectSchema({ tool_call_id: { type: 'string' } }, ['tool_call_id']),
    sync: true,
    passive: false,
  },
];

export const validateSubscriptionTool: BuiltinValidator = (name, args, _callId, ctx) => {
  if (name !== 'cancel_subscription') throw new Error(`not a subscription tool: ${name}`);
  const id = str(args.tool_call_id);
  if (id === undefined) return { result: TOOL_CALL_ID_REQUIRED };
  if (!ctx.subscriptions.has(id)) return { result: noSubscription(id) };
  return { result: subscriptionCancelled(id), cancelledSubscription: id };
};

export const TOOL_CALL_ID_REQUIRED = 'Error: tool_call_id is required';
export const noSubscription = (id: string) => `Error: no active subscription found for tool call ID '${id}'`;
export const subscriptionCancelled = (id: string) => `Subscription '${id}' cancelled successfully.`;
