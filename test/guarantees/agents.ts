/**
 * The agents of the matrix's `agents: several` systems (issue 40), the same in the test's worker and in the `dev`
 * process (`dev-agents.ts`): `planner` and `helper`, with the guarantee tools, the suite's model and instructions of
 * their own, so each model request says by its system prompt which agent made it. Threads of a `several` cell run
 * `planner`; `planner` may spawn `helper`.
 */
import { type AgentDefinition, defineAgent } from '../../src/activities/agents';
import type { ModelProvider } from '../../src/model/provider';
import type { MatrixCell } from './matrix';
import { guaranteeTools } from './tools';

export const PLANNER = 'You are PLANNER, of the guarantee suite.';
export const HELPER = 'You are HELPER, of the guarantee suite.';

/**
 * `planner` and `helper` on `model`, with no provider limits of their own: on the worker's model, the worker's
 * `limits` hold for them (a `throttled` cell checks their first call waited for the closed key).
 */
export function guaranteeAgents(model: ModelProvider): AgentDefinition[] {
  const own = { model, tools: guaranteeTools() };
  return [
    defineAgent({ name: 'planner', description: 'Plans the work', instructions: PLANNER, spawns: ['helper'], ...own }),
    defineAgent({ name: 'helper', description: 'Helps with one part of it', instructions: HELPER, ...own }),
  ];
}

/** What the scenarios' threads name at start: `planner` in a `several` cell, nothing (the default agent) else. */
export const agentOf = (cell: MatrixCell): { agent?: string } =>
  cell.agents === 'several' ? { agent: 'planner' } : {};
