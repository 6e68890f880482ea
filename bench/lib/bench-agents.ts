/**
 * The benchmark's two agents (issue 40), for `bench/probes/agents-waves.ts`: both on the worker's one
 * `SimulatedModel`, each with its own instructions and its own tool set of the same size (each has `bench_tool`,
 * which the model calls, and a second tool it never calls), so that a thread of either costs the same to run and only
 * the agent its slices resolve differs. Their instructions and tool descriptions are of about the same length for the
 * same reason.
 */
import { type AgentDefinition, defineAgent } from '../../src/activities/agents';
import type { ModelProvider } from '../../src/model/provider';
import { defineTool, type ToolContext } from '../../src/tools/tool';

/** The agents' names: `alpha` is the worker's default (the first of its `agents`). */
export const BENCH_AGENTS = ['alpha', 'beta'] as const;

/** The benchmark's agents on `model`; `dispatched` is told of every `bench_tool` call (the driver answers it). */
export function benchAgents(model: ModelProvider, dispatched: (ctx: ToolContext) => void): AgentDefinition[] {
  const benchTool = (description: string) =>
    defineTool({
      name: 'bench_tool',
      description,
      parameters: { type: 'object' },
      execute(_args, ctx) {
        dispatched(ctx);
      },
    });
  const never = (name: string, description: string) =>
    defineTool({
      name,
      description,
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      execute() {
        // Never called: the model calls `bench_tool`.
      },
    });
  return [
    defineAgent({
      name: 'alpha',
      description: 'Watches CI builds',
      instructions: 'You watch CI builds. Check the build status tool before you answer, and keep answers short.',
      model,
      tools: [
        benchTool('an external system that answers later: the status of a CI build'),
        never('bench_notes', 'the notes a team keeps on flaky tests and on the builds they break'),
      ],
    }),
    defineAgent({
      name: 'beta',
      description: 'Triages deploys',
      instructions: 'You triage deploys. Ask the deploy tracker tool first and reply in one line with what to do.',
      model,
      tools: [
        benchTool('an external system that answers later: the state of a deploy and its rollout'),
        never('bench_lookup', 'the owners of a service and who is on call for it this week, by name'),
      ],
    }),
  ];
}
