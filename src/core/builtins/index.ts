/**
 * The runtime's own tools, one module per family (threads, subscriptions, sleep), each holding its specs, the
 * validation of a call and the texts the model reads. The slice validates a call here and either answers it or hands
 * an action back to the workflow, which alone issues the Temporal commands (src/workflows/runtime-actions.ts).
 */
import { SLEEP_TOOLS, validateSleepTool } from './sleep';
import type { BuiltinCallContext, BuiltinOutcome, BuiltinToolSpec, BuiltinValidator } from './spec';
import { SUBSCRIPTION_TOOLS, validateSubscriptionTool } from './subscriptions';
import { THREAD_TOOLS, validateThreadTool } from './threads';

export type { BuiltinCallContext, BuiltinOutcome, BuiltinToolSpec, SpawnableAgent } from './spec';

const FAMILIES: readonly { tools: readonly BuiltinToolSpec[]; validate: BuiltinValidator }[] = [
  { tools: THREAD_TOOLS, validate: validateThreadTool },
  { tools: SUBSCRIPTION_TOOLS, validate: validateSubscriptionTool },
  { tools: SLEEP_TOOLS, validate: validateSleepTool },
];

/** Every built-in tool, in the order the model sees them. */
export const BUILTIN_TOOLS: readonly BuiltinToolSpec[] = FAMILIES.flatMap((f) => f.tools);

export const BUILTIN_TOOL_NAMES: ReadonlySet<string> = new Set(BUILTIN_TOOLS.map((t) => t.name));

const validatorOf = new Map(FAMILIES.flatMap((f) => f.tools.map((t) => [t.name, f.validate] as const)));

/** The outcome of a call of the built-in tool `name` with parsed arguments (anything not an object counts as `{}`). */
export async function runBuiltinTool(
  name: string,
  rawArgs: unknown,
  callId: string,
  ctx: BuiltinCallContext,
): Promise<BuiltinOutcome> {
  const validate = validatorOf.get(name);
  if (!validate) throw new Error(`not a runtime tool: ${name}`);
  const args = (typeof rawArgs === 'object' && rawArgs !== null ? rawArgs : {}) as Record<string, unknown>;
  return await validate(name, args, callId, ctx);
}
