/**
 * Which agent rebuilds a recorded slice (issue 40, docs/evals.md "Agents"): the one the slice recorded
 * (`SliceResult.agent`; `default` before release 0.13), or the candidate `agent`; its instructions, tools and
 * spawnable agents shape the request, its first model (or the candidate `model`) answers. A recorded hash that the
 * definition no longer has is reported, never refused.
 */
import {
  type AgentCatalog,
  type AgentDefinition,
  agentCatalog,
  defineAgent,
  definitionHash,
} from '../activities/agents';
import { toolSpecs } from '../activities/tool-calls';
import { agentNameProblem, DEFAULT_AGENT, type SliceAgent } from '../core/agents';
import type { ModelProvider, ToolSpec } from '../model/provider';
import type { ThreadRecord } from '../store/conversation-store';
import type { Tool } from '../tools/tool';
import { EvalOptionError } from './errors';

/** What {@link EvalAgents} reads of the eval's options. */
export interface EvalAgentOptions {
  /** The agents the recorded worker hosted: definitions (as `createAgentWorker({ agents })` took them) or a catalog. */
  agents?: readonly AgentDefinition[] | AgentCatalog;
  /** The candidate agent: every slice is rebuilt with its definition, whichever agent ran it. */
  agent?: string;
  /** The candidate model: answers every slice, in place of its agent's own first model. */
  model?: ModelProvider;
  /** The default agent's instructions, when `agents` defines no `default` (a worker's own `systemPrompt`). */
  system?: string;
  /** The default agent's tools, when `agents` defines no `default` (a worker's own `tools`). */
  tools?: readonly Tool[];
}

/** How one slice is rebuilt and who answers it. */
export interface SlicePlan {
  /** The agent whose definition rebuilds the slice's requests. */
  agent: string;
  /** Its instructions (undefined: the runtime's default prompt); the thread's id is appended by `threadSystemPrompt`. */
  instructions: string | undefined;
  /** Its tool specs, the built-ins after them (`spawn_thread` with its spawnable agents). */
  specs: ToolSpec[];
  /** The candidate model that answers the slice. */
  model: ModelProvider;
  /** What the slice recorded (release 0.13 on). */
  recorded?: SliceAgent;
  /** The recorded agent's definition hashes now to `now`, not to the recorded hash: it changed since the slice ran. */
  changed?: { now: string };
}

/** A definition as evals use it: the default agent of `system`/`tools` has no model of its own. */
interface Definition {
  name: string;
  instructions: string | undefined;
  tools: readonly Tool[];
  model?: ModelProvider;
  /** The hash the definition would have recorded on a slice served by `model` (the options agent's depends on it). */
  hashFor(model: string): string;
  source?: AgentDefinition;
}

/** What a slice recorded of its agent, when it looks like a {@link SliceAgent} (a record is data from elsewhere). */
export function recordedAgent(x: unknown): SliceAgent | undefined {
  if (typeof x !== 'object' || x === null) return undefined;
  const { name, model, hash } = x as Record<string, unknown>;
  if (agentNameProblem(name) !== undefined || typeof model !== 'string' || typeof hash !== 'string') return undefined;
  return { name: name as string, model, hash };
}

/** Resolves the definitions of recorded slices, once per agent name, and plans each slice's rebuild. */
export class EvalAgents {
  private readonly catalog: AgentCatalog | undefined;
  private readonly resolved = new Map<string, Promise<Definition | undefined>>();
  private readonly plans = new Map<Definition, Promise<{ specs: ToolSpec[] }>>();

  constructor(private readonly opts: EvalAgentOptions) {
    const { agents } = opts;
    try {
      this.catalog =
        agents === undefined ? undefined : Array.isArray(agents) ? agentCatalog({ agents }) : (agents as AgentCatalog);
    } catch (e) {
      throw new EvalOptionError((e as Error).message); // two agents of one name, one not from defineAgent
    }
    if (opts.agent !== undefined) {
      const problem = agentNameProblem(opts.agent);
      if (problem) throw new EvalOptionError(`agent: ${problem}`);
    }
  }

  /** How `slice` of `thread` is rebuilt; an {@link EvalOptionError} when no definition or no model serves it. */
  async plan(thread: ThreadRecord, sliceId: string, recordedRaw: unknown): Promise<SlicePlan> {
    const recorded = recordedAgent(recordedRaw);
    const ranAs = recorded?.name ?? DEFAULT_AGENT;
    const own = await this.definition(thread, ranAs);
    const candidateName = this.opts.agent ?? ranAs;
    const def = this.opts.agent === undefined ? own : await this.definition(thread, candidateName);
    if (!def)
      throw new EvalOptionError(
        this.opts.agent !== undefined
          ? `agent: no agent named '${candidateName}' is defined (${this.known()})`
          : `${sliceId} ran agent '${ranAs}', which \`agents\` does not define (${this.known()}): pass its definition, or a candidate \`agent\``,
      );
    const model = this.opts.model ?? def.model;
    if (!model)
      throw new EvalOptionError(
        `${sliceId} is rebuilt with the default agent of \`system\` and \`tools\`, which has no model: pass the candidate \`model\``,
      );
    const now = own && recorded ? own.hashFor(recorded.model) : undefined;
    return {
      agent: def.name,
      instructions: def.instructions,
      specs: (await this.specsOf(def)).specs,
      model,
      ...(recorded && { recorded }),
      ...(now !== undefined && now !== recorded!.hash && { changed: { now } }),
    };
  }

  private known(): string {
    const names = [...new Set([...(this.catalog?.names ?? []), DEFAULT_AGENT])];
    return `the agents are ${names.join(', ')}`;
  }

  private definition(thread: ThreadRecord, name: string): Promise<Definition | undefined> {
    // Resolved per name, once: a resolver sees the first thread that names the agent.
    let found = this.resolved.get(name);
    if (!found) {
      found = this.resolve(thread, name);
      this.resolved.set(name, found);
    }
    return found;
  }

  private async resolve(thread: ThreadRecord, name: string): Promise<Definition | undefined> {
    const def = await this.catalog?.resolve({ threadId: thread.threadId, agent: name });
    if (def)
      return {
        name: def.name,
        instructions: def.instructions,
        tools: def.tools,
        model: def.models[0]!.model,
        hashFor: () => def.hash,
        source: def,
      };
    if (name !== DEFAULT_AGENT) return undefined;
    // A worker's own options (`model`, `systemPrompt`, `tools`) are its `default` agent, a routing list of one model.
    const { system, tools = [] } = this.opts;
    return {
      name,
      instructions: system,
      tools,
      ...(this.opts.model && { model: this.opts.model }),
      hashFor: (model) => definitionHash(system, tools, [model]),
    };
  }

  private specsOf(def: Definition): Promise<{ specs: ToolSpec[] }> {
    let p = this.plans.get(def);
    if (!p) {
      p = (async () => {
        const spawnable = def.source && this.catalog ? await this.catalog.spawnable(def.source) : [];
        return { specs: toolSpecs(new Map(def.tools.map((t) => [t.name, t])), true, spawnable) };
      })();
      this.plans.set(def, p);
    }
    return p;
  }
}

/**
 * `agents` with `tools` in place of their own and `model` (when given) in place of their models, all else kept
 * (`experiment run --agents`: the experiment's tools, which never run). Their hashes change with it.
 */
export function retooledAgents(
  agents: readonly AgentDefinition[],
  tools: readonly Tool[],
  model?: ModelProvider,
): AgentDefinition[] {
  return agents.map((a) =>
    defineAgent({
      name: a.name,
      description: a.description,
      ...(a.instructions !== undefined && { instructions: a.instructions }),
      model: model ?? a.models.map((m) => ({ model: m.model, ...(m.limits && { limits: m.limits }) })),
      tools,
      spawns: a.spawns,
      ...(a.completionPolicy && { completionPolicy: a.completionPolicy }),
      ...(a.compactionThreshold !== undefined && { compactionThreshold: a.compactionThreshold }),
      routing: { closedForMs: a.closedForMs },
    }),
  );
}
