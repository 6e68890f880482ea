/**
 * Agent definitions (issue 40): what a thread runs with — instructions, models, tools, limits — by the name its start
 * gave. A worker hosts many; a thread's slices resolve its agent here, at each slice, so a changed definition reaches
 * the next slice without a restart. Workflow code only ever carries the name.
 */
import { createHash } from 'node:crypto';
import { AGENT_NAME_PATTERN, agentNameProblem, DEFAULT_AGENT } from '../core/agents';
import { BUILTIN_TOOL_NAMES, type SpawnableAgent } from '../core/builtins';
import { limitsProblem, type ProviderLimits } from '../core/capacity';
import { type Budget, BUDGET_FIELDS } from '../core/budget';
import type { ModelProvider } from '../model/provider';
import { modelFromSpec } from '../model/registry';
import type { Tool, ToolSource } from '../tools/tool';
import type { CompletionPolicy } from './retry';

/** One model of an agent's routing list, with the provider limits of its own key. */
export interface ModelRoute {
  /** A `provider:model` spec (`modelFromSpec`) or a {@link ModelProvider}. */
  model: string | ModelProvider;
  /** Provider limits of this model's key (docs/budgets.md). @default none */
  limits?: ProviderLimits;
}

/** What {@link defineAgent} takes. Only `name` and `model` are required. */
export interface AgentInit {
  /** How threads, `spawn_thread`, the CLI and the `AgentName` search attribute name it: 1-64 of `[A-Za-z0-9_.-]`. */
  name: string;
  /** What it is for: the spawning model reads it in `spawn_thread`'s `agent` argument. @default '' */
  description?: string;
  /** Its system prompt (the thread's id is appended). @default texts.DEFAULT_SYSTEM_PROMPT */
  instructions?: string;
  /**
   * Its model, or an ordered routing list: a slice runs on the first, and on the next one only when the one before is
   * unavailable past its retry policy (server errors, overloaded, timeouts, or its limits key closed for longer than
   * `routing.closedForMs`). Each entry may carry the limits of its own key.
   * @example 'anthropic:claude-sonnet-4-5'
   * @example ['anthropic:claude-sonnet-4-5', { model: 'openai:gpt-4.1', limits: { rpm: 500 } }]
   */
  model: string | ModelProvider | readonly (string | ModelProvider | ModelRoute)[];
  /** Its own tools (after them, the built-in runtime tools). @default none */
  tools?: readonly Tool[];
  /** Tools per agent tree, asked at each slice (RAP toolsets). @default none */
  toolSources?: readonly ToolSource[];
  /** Provider limits of its first model's key (a routing entry's own `limits` wins). @default none */
  limits?: ProviderLimits;
  /** Model retries and timeouts of its slices (docs/semantics.md §17). @default DEFAULT_COMPLETION_POLICY */
  completionPolicy?: Partial<CompletionPolicy>;
  /**
   * The budget of each of its threads that has none of its own (docs/budgets.md): a cheap agent's threads stop at
   * their cap unless `setBudget` gives one another. Trees and tenants keep their own budgets.
   * @default none
   * @example { usd: 0.5 }
   */
  budget?: Budget;
  /** Fraction of the model's context window above which a thread compacts itself (0: never). @default 0.75 */
  compactionThreshold?: number;
  /**
   * Other agents its threads may spawn with `spawn_thread`'s `agent` argument (by name; each must be defined where
   * the thread runs). A child without `agent` is of the parent's own agent. @default none
   */
  spawns?: readonly string[];
  /** When routing moves on from a model whose limits key is closed: after waiting this long. @default 60000 */
  routing?: { closedForMs?: number };
}

/** A checked agent definition (see {@link defineAgent}). */
export interface AgentDefinition {
  readonly name: string;
  readonly description: string;
  readonly instructions?: string;
  /** The routing list, first model first: never empty. */
  readonly models: readonly { model: ModelProvider; limits?: ProviderLimits }[];
  readonly tools: readonly Tool[];
  readonly toolSources: readonly ToolSource[];
  readonly completionPolicy?: Partial<CompletionPolicy>;
  readonly budget?: Budget;
  readonly compactionThreshold?: number;
  readonly spawns: readonly string[];
  /** How long a closed limits key is waited for before the next model serves. */
  readonly closedForMs: number;
  /** 12 hex digits over instructions, tool specs and model ids: recorded with each slice it runs. */
  readonly hash: string;
}

/** The thread a definition is resolved for (issue 40 §1): ask your database or a tenant's settings with it. */
export interface AgentThread {
  /** The thread whose slice asks (empty when the worker lists the agents `spawn_thread` offers). */
  threadId: string;
  /** The agent the thread names (`default` when its start named none). */
  agent: string;
  /** The tree's tenant, if its start gave one. */
  tenant?: string;
  /** The tree's end user (the root's metadata `user_id`), if any. */
  userId?: string;
}

/**
 * Resolves a thread's agent at each of its slices: a definition, or undefined to fall back to the worker's `agents`
 * (and, for `default`, its own options). Called in the slice activity, never in workflow code; keep it fast (cache).
 */
export type AgentResolver = (thread: AgentThread) => Promise<AgentDefinition | undefined> | AgentDefinition | undefined;

const DEFAULT_CLOSED_FOR_MS = 60_000;

/**
 * An agent definition for `createAgentWorker({ agents })`, checked now: a bad name, no model, a tool named like a
 * built-in or wrong limits throw a `TypeError` here, not at a thread's first slice.
 *
 * @example
 * ```ts
 * const reviewer = defineAgent({
 *   name: 'reviewer',
 *   description: 'Reviews a diff and reports what to fix',
 *   instructions: 'You review code. Be brief.',
 *   model: 'anthropic:claude-haiku-4-5',
 * });
 * const coder = defineAgent({ name: 'coder', model: 'anthropic:claude-sonnet-4-5', tools: [runTests], spawns: ['reviewer'] });
 * ```
 */
export function defineAgent(init: AgentInit): AgentDefinition {
  const problem = agentNameProblem(init?.name);
  if (problem) throw new TypeError(`defineAgent: ${problem}`);
  const given = Array.isArray(init.model) ? init.model : [init.model];
  if (given.length === 0 || init.model === undefined || init.model === null)
    throw new TypeError(`defineAgent(${init.name}): model is required`);
  const models = (given as readonly (string | ModelProvider | ModelRoute)[]).map((m, i) => {
    // A provider object may have a field named `model` of its own (the AI SDK's do): it is a route only without `stream`.
    const route: ModelRoute =
      typeof m === 'object' && m !== null && !('stream' in m) && 'model' in m
        ? m
        : { model: m as string | ModelProvider };
    const model = typeof route.model === 'string' ? modelFromSpec(route.model) : route.model;
    if (!model || typeof model.stream !== 'function')
      throw new TypeError(`defineAgent(${init.name}): model ${i} is neither a spec nor a ModelProvider`);
    const limits = route.limits ?? (i === 0 ? init.limits : undefined);
    const wrong = limits && limitsProblem(limits);
    if (wrong) throw new TypeError(`defineAgent(${init.name}): ${wrong}`);
    return { model, ...(limits && { limits }) };
  });
  const tools = init.tools ?? [];
  for (const t of tools)
    if (BUILTIN_TOOL_NAMES.has(t.name))
      throw new TypeError(`defineAgent(${init.name}): tool name '${t.name}' is reserved for a built-in runtime tool`);
  for (const s of init.spawns ?? []) {
    const bad = agentNameProblem(s);
    if (bad) throw new TypeError(`defineAgent(${init.name}): spawns: ${bad}`);
  }
  const closedForMs = init.routing?.closedForMs ?? DEFAULT_CLOSED_FOR_MS;
  if (!Number.isFinite(closedForMs) || closedForMs < 0)
    throw new TypeError(`defineAgent(${init.name}): routing.closedForMs must be a non-negative number`);
  return Object.freeze({
    name: init.name,
    description: init.description ?? '',
    ...(init.instructions !== undefined && { instructions: init.instructions }),
    models: Object.freeze(models),
    tools,
    toolSources: init.toolSources ?? [],
    ...(init.completionPolicy && { completionPolicy: init.completionPolicy }),
    ...(init.budget && { budget: checkedBudget(init.name, init.budget) }),
    ...(init.compactionThreshold !== undefined && { compactionThreshold: init.compactionThreshold }),
    spawns: [...new Set((init.spawns ?? []).filter((s) => s !== init.name))],
    closedForMs,
    hash: definitionHash(
      init.instructions,
      tools,
      models.map((m) => m.model.id),
    ),
  });
}

function checkedBudget(name: string, budget: Budget): Budget {
  for (const [k, v] of Object.entries(budget))
    if (!(BUDGET_FIELDS as readonly string[]).includes(k) || typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw new TypeError(
        `defineAgent(${name}): budget.${k} must be one of ${BUDGET_FIELDS.join(', ')}, a number >= 0`,
      );
  return budget;
}

/** 12 hex digits of sha-256 over what shapes a model request: instructions, tool specs, model ids. */
export function definitionHash(
  instructions: string | undefined,
  tools: readonly Pick<Tool, 'name' | 'description' | 'parameters'>[],
  models: readonly string[],
): string {
  const specs = tools.map((t) => [t.name, t.description, t.parameters]);
  return createHash('sha256')
    .update(JSON.stringify([instructions ?? null, specs, models]))
    .digest('hex')
    .slice(0, 12);
}

/** Where a worker finds its threads' agents (issue 40): its resolver, its `agents`, its own options as `default`. */
export interface AgentCatalog {
  /** The definition of a thread's agent, or undefined when nothing defines it. */
  resolve(thread: AgentThread): Promise<AgentDefinition | undefined>;
  /** The names the worker itself defines (its resolver's aside), for messages and clients. */
  readonly names: readonly string[];
  /** What `spawn_thread` offers a thread of `agent` (each spawnable agent with its description). */
  spawnable(agent: AgentDefinition): Promise<SpawnableAgent[]>;
}

/**
 * The catalog of a worker: `resolveAgent` first, then `agents` by name, then `fallback` for `default`. Duplicate
 * names are refused. A spawnable agent the catalog cannot resolve is left out of `spawn_thread`'s enum.
 */
export function agentCatalog(options: {
  agents?: readonly AgentDefinition[];
  /** What `default` is when no agent has that name: the worker's own options, or the agent `defaultAgent` names. */
  fallback?: AgentDefinition | string;
  resolveAgent?: AgentResolver;
}): AgentCatalog {
  const byName = new Map<string, AgentDefinition>();
  for (const a of options.agents ?? []) {
    if (!a || typeof a.hash !== 'string' || !AGENT_NAME_PATTERN.test(a.name))
      throw new TypeError('agents: each agent must come from defineAgent(...)');
    if (byName.has(a.name)) throw new TypeError(`agents: two agents are named '${a.name}'`);
    byName.set(a.name, a);
  }
  const fallback = typeof options.fallback === 'string' ? byName.get(options.fallback) : options.fallback;
  if (typeof options.fallback === 'string' && !fallback)
    throw new TypeError(`defaultAgent: no agent is named '${options.fallback}'`);
  if (fallback && !byName.has(DEFAULT_AGENT)) byName.set(DEFAULT_AGENT, fallback);
  const resolve = async (thread: AgentThread): Promise<AgentDefinition | undefined> => {
    const found = options.resolveAgent ? await options.resolveAgent(thread) : undefined;
    if (found !== undefined) {
      if (typeof found.hash !== 'string' || !Array.isArray(found.models) || found.models.length === 0)
        throw new TypeError(`resolveAgent(${thread.agent}): not a definition from defineAgent(...)`);
      return found;
    }
    return byName.get(thread.agent);
  };
  return {
    resolve,
    names: [...byName.keys()],
    async spawnable(agent) {
      const out: SpawnableAgent[] = [];
      for (const name of agent.spawns) {
        const def =
          byName.get(name) ??
          (options.resolveAgent ? await options.resolveAgent({ threadId: '', agent: name }) : undefined);
        if (def) out.push({ name, description: def.description || `the ${name} agent` });
      }
      return out;
    },
  };
}
