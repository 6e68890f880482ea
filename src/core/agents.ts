/**
 * Agents (issue 40): a thread runs the agent its start named — instructions, model, tools — resolved by the worker at
 * each slice, never in workflow code. What the workflow and the store know of an agent is only its name; what a slice
 * used is recorded with it as a {@link SliceAgent}.
 */

/** What a slice ran with: recorded in its result, in the store and in Temporal's history. */
export interface SliceAgent {
  /** The agent's name (`default` for a worker's own options). */
  name: string;
  /** The id of the model that served the slice (after routing, if the first could not). */
  model: string;
  /** 12 hex digits of a hash of the definition's instructions, tool list and model list: a changed definition differs. */
  hash: string;
}

/** Why a slice found no definition for its thread's agent (`ApplicationFailure` details of `AgentUnavailable`). */
export interface AgentUnavailable {
  agent: string;
  /** What the worker knows instead, for the message and `status`. */
  known?: string[];
  /** Why, when it is not that nothing defines the agent: the worker's `resolveAgent` failed (its message). */
  reason?: string;
}

/** The name of the agent a worker's own options define (`model`, `systemPrompt`, `tools`, ...). */
export const DEFAULT_AGENT = 'default';

/** Agent names: a slug, so a name is safe as a search attribute, a CLI argument and a schema enum value. */
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Why `name` cannot name an agent, or undefined. */
export function agentNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return 'an agent name must be a string';
  if (!AGENT_NAME_PATTERN.test(name))
    return `agent name ${JSON.stringify(name.slice(0, 80))} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit`;
  return undefined;
}

/** A name as a thread's state reads it: a valid name, else none (a hand-made start with a bad one runs the default). */
export function agentName(x: unknown): string | undefined {
  return agentNameProblem(x) === undefined ? (x as string) : undefined;
}

/** How long a thread whose agent is not defined waits before its slice asks again: doubling from 30 s up to 10 min. */
export function agentRecheckMs(checks: number): number {
  return Math.min(30_000 * 2 ** Math.max(0, checks - 1), 10 * 60_000);
}
