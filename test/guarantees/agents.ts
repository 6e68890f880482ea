/**
 * The agents of the matrix's `agents: several` systems (issue 40), the same in the test's worker and in the `dev`
 * process (`dev-agents.ts`): `planner` and `helper`, with the guarantee tools, the suite's model and instructions of
 * their own, so each model request says by its system prompt which agent made it. Threads of a `several` cell run
 * `planner`; `planner` may spawn `helper`.
 */
import { type AgentDefinition, defineAgent } from '../../src/activities/agents';
import type { ProviderLimits } from '../../src/core/capacity';
import type { ModelProvider } from '../../src/model/provider';
import type { MatrixCell } from './matrix';
import { guaranteeTools } from './tools';

export const PLANNER = 'You are PLANNER, of the guarantee suite.';
export const HELPER = 'You are HELPER, of the guarantee suite.';

/**
 * `planner` and `helper` on `model`. With `limits` (a `throttled` cell), each carries the worker's provider limits
 * itself: a worker's `limits` are its default agent's, and an agent's model has only the limits its definition gives.
 */
export function guaranteeAgents(model: ModelProvider, limits?: ProviderLimits): AgentDefinition[] {
  const own = { model, tools: guaranteeTools(), ...(limits && { limits }) };
  return [
    defineAgent({ name: 'planner', description: 'Plans the work', instructions: PLANNER, spawns: ['helper'], ...own }),
    defineAgent({ name: 'helper', description: 'Helps with one part of it', instructions: HELPER, ...own }),
  ];
}

/** What the scenarios' threads name at start: `planner` in a `several` cell, nothing (the default agent) else. */
export const agentOf = (cell: MatrixCell): { agent?: string } =>
  cell.agents === 'several' ? { agent: 'planner' } : {};

/** The environment variable that hands a `throttled` cell's limits to the `dev` process's agents module. */
export const AGENT_LIMITS_ENV = 'GUARANTEE_AGENT_LIMITS';
