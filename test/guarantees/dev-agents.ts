/**
 * `infinity-temporal dev --tools` module of the guarantee suite's `dev` cells with `agents: several`: the guarantee
 * tools for the default agent, and `planner` and `helper` on the command's own model (`openai-compatible:scripted`
 * reads INFINITY_BASE_URL, the wire model, as `--model` does), with the cell's provider limits when it has some.
 */
import { modelFromSpec } from '../../src/model/registry';
import { AGENT_LIMITS_ENV, guaranteeAgents } from './agents';
import { guaranteeTools } from './tools';

const limits = process.env[AGENT_LIMITS_ENV];
export const tools = guaranteeTools();
export const agents = guaranteeAgents(
  modelFromSpec('openai-compatible:scripted'),
  limits ? (JSON.parse(limits) as Parameters<typeof guaranteeAgents>[1]) : undefined,
);
