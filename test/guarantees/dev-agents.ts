/**
 * `infinity-temporal dev --tools` module of the guarantee suite's `dev` cells with `agents: several`: the guarantee
 * tools for the default agent, and `planner` and `helper` on the command's own model (`openai-compatible:scripted`
 * reads INFINITY_BASE_URL, the wire model, as `--model` does). No limits of their own: the same model as the
 * command's, so `--limits` holds for them too.
 */
import { modelFromSpec } from '../../src/model/registry';
import { guaranteeAgents } from './agents';
import { guaranteeTools } from './tools';

export const tools = guaranteeTools();
export const agents = guaranteeAgents(modelFromSpec('openai-compatible:scripted'));
