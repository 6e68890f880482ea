/**
 * What every built-in tool family declares: the tool as the model sees it, and how the slice treats a call of it.
 * Built-in tools need workflow commands (children, signals, timers), so the slice validates a call and hands an action
 * back to the workflow instead of running it (docs/architecture.md, "The slice protocol").
 */
import type { RuntimeAction } from '../slice-protocol';
import type { ThreadKind } from '../types';

export interface BuiltinToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Answered inline by the slice (the model continues in the same slice). */
  sync: boolean;
  /** Represents waiting: a pending passive call never defers events. */
  passive: boolean;
}

/** What the slice knows of the calling thread when it validates a built-in call. */
export interface BuiltinCallContext {
  threadId: string;
  kind: ThreadKind;
  /** Thread ids from the root to this thread. */
  stack: readonly string[];
  parentThreadId?: string;
  subscriptions: ReadonlySet<string>;
  /** The parent of a thread according to the store, or null when the thread is unknown. */
  parentOf(threadId: string): Promise<string | undefined | null>;
  now(): number;
  /**
   * Agents other than its own that this thread's agent may spawn (issue 40), with what each is for: `spawn_thread`
   * then takes an `agent` argument naming one. Absent or empty: `spawn_thread` as the original runtime has it.
   */
  spawnable?: readonly SpawnableAgent[];
}

/** An agent a thread may name in `spawn_thread` (issue 40). */
export interface SpawnableAgent {
  name: string;
  /** What the agent is for, as the spawning model reads it. */
  description: string;
}

/**
 * A call answered at once (an error text, or a sync tool's result); an action for the workflow to carry out; or a call
 * that simply stays pending until an input arrives (`sleep_until_event_or_input`).
 */
export type BuiltinOutcome =
  { result: string; cancelledSubscription?: string } | { action: RuntimeAction } | { pending: true };

/** One family's validator: the outcome of a call of one of its tools, by name. */
export type BuiltinValidator = (
  name: string,
  args: Record<string, unknown>,
  callId: string,
  ctx: BuiltinCallContext,
) => Promise<BuiltinOutcome> | BuiltinOutcome;

export const objectSchema = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});

/** The argument as a string, or undefined when it is missing or of another type. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
