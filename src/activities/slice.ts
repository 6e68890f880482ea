/**
 * The `runSlice` activity (docs/architecture.md, "The slice protocol"): load → one completion → commit atomically → dispatch at most one async tool
 * call. Its input and output stay small; the conversation moves only between this process and the store. The phases
 * are in slice-attempt.ts, the result in slice-result.ts, tool dispatch in dispatch.ts, a committed slice's retry in
 * replay.ts, what the worker gives the slices in slice-dependencies.ts.
 */
import type { RewindInput, SliceInput, SlicePeek, SliceResult } from '../core/slice-protocol';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { DEFAULT_COMPLETION_POLICY } from './completion';
import { createDispatch, guardedEmit, treeTools } from './dispatch';
import { sliceAttempt, type SliceRuntime } from './slice-attempt';
import type { SliceDependencies } from './slice-dependencies';
import { sliceEntryPoints } from './slice-entry';
import { type SliceControl, SliceJobs } from './slice-jobs';
import type { ToolCallKind } from './slice-metrics';
import { createRewind } from './rewind';
import { redactSecrets } from '../store/redact';
import { ApplicationFailure } from '@temporalio/activity';
import { type AgentUnavailable, DEFAULT_AGENT } from '../core/agents';
import { SLICE_REFUSED } from '../core/slice-protocol';
import { type AgentDefinition, agentCatalog, defineAgent } from './agents';
import { ownThreadOnly } from './own-thread';

/**
 * The slice activities of one worker (slice-entry.ts), over its store, model and tools. Checks once what every slice
 * relies on (no tool takes a built-in's name) and derives what every attempt shares (slice-attempt.ts).
 */
export function createSliceActivities(deps: SliceDependencies) {
  for (const t of deps.tools) {
    if (BUILTIN_TOOL_NAMES.has(t.name))
      throw new TypeError(`tool name '${t.name}' is reserved for a built-in runtime tool`);
  }
  const emit = guardedEmit(deps);
  const catalog = deps.agents ?? agentCatalog({ fallback: optionsAgent(deps) });
  // One runtime per definition: a resolver that returns the same object reuses it; a new object gets a new one.
  const runtimes = new WeakMap<AgentDefinition, SliceRuntime>();
  const runtimeOf = (agent: AgentDefinition): SliceRuntime => {
    let rt = runtimes.get(agent);
    if (!rt) {
      rt = agentRuntime(deps, agent, emit);
      runtimes.set(agent, rt);
    }
    return rt;
  };
  /** The runtime of the slice's agent, or a refusal the thread waits on (never a failing workflow task). */
  const runtimeFor = async (input: SliceInput): Promise<SliceRuntime> => {
    const name = input.agent ?? DEFAULT_AGENT;
    let agent: AgentDefinition | undefined;
    let reason: string | undefined;
    try {
      agent = await catalog.resolve({
        threadId: input.threadId,
        agent: name,
        ...(input.tenant !== undefined && { tenant: input.tenant }),
        ...(input.userId !== undefined && { userId: input.userId }),
      });
    } catch (e) {
      // The definitions' source is down (a database, a tenant service): the thread's inputs are not at fault, so it
      // waits for its agent as for a missing one, instead of its batch being set aside after the attempts.
      // Its message goes to history, status and the UI: a database URL quoted in it loses its password first.
      reason = redactSecrets(`resolveAgent failed: ${e instanceof Error ? e.message : String(e)}`).slice(0, 500);
    }
    if (!agent) {
      const details: AgentUnavailable = {
        agent: name,
        known: catalog.names.slice(0, 20),
        ...(reason !== undefined && { reason }),
      };
      emit({ threadId: input.threadId, type: 'agent_unavailable', ...details });
      emit({ threadId: input.threadId, type: 'status', status: 'agent_unavailable' });
      throw ApplicationFailure.create({
        type: SLICE_REFUSED.agentUnavailable,
        nonRetryable: true,
        message:
          reason !== undefined
            ? `agent '${name}' could not be resolved (${reason}); the thread waits and asks again`
            : `no agent named '${name}' is defined on this worker (it defines: ${catalog.names.join(', ') || 'none'}); the thread waits until it is, or until it is moved with setAgent`,
        details: [details],
      });
    }
    const rt = runtimeOf(agent);
    return agent.spawns.length > 0 ? { ...rt, spawnable: await catalog.spawnable(agent) } : rt;
  };
  const metrics = deps.metrics;

  /** One attempt of a slice, counted (slice-metrics.ts) and traced (slice-tracing.ts). */
  async function runSlice(input: SliceInput, control: SliceControl): Promise<SliceResult> {
    metrics?.started(input.kind);
    const attempt = async () => sliceAttempt(await runtimeFor(input), input, control, performance.now());
    try {
      return await (deps.tracing ? deps.tracing.run(input, attempt) : attempt());
    } catch (e) {
      metrics?.failed(input.kind, e);
      throw e;
    }
  }

  /**
   * Release 0.6 (decision 67), a local activity before a local slice of several queued inputs: whether the slice
   * already committed (a workflow task that ran it failed afterwards), and with which inputs, so the task's retry takes
   * the same ones.
   */
  // Lifecycle notices are the worker's, whatever the thread's agent.
  const notices = createDispatch(deps, async () => new Map(), emit);

  async function peekSlice(threadId: string, sliceId: string): Promise<SlicePeek> {
    const prior = await deps.store.findSlice(threadId, sliceId);
    if (!prior) return { committed: false };
    return prior.inputs ? { committed: true, inputs: prior.inputs } : { committed: true };
  }

  return {
    ...sliceEntryPoints(runSlice, emit, {
      jobs: deps.jobs ?? new SliceJobs(),
      handoffQueue: deps.handoffQueue,
      heartbeatIntervalMs: deps.heartbeatIntervalMs,
    }),
    peekSlice: ownThreadOnly((threadId: string, _sliceId: string) => threadId, peekSlice),
    // A rewind (issue 28 §2) tells the archived pending call's tool, as an interrupting user text does.
    rewindThread: ownThreadOnly(
      (input: RewindInput) => input.threadId,
      createRewind(deps.store, (threadId, callId) => notices.notify((l) => l.callCancelled?.(threadId, callId))),
    ),
  };
}

export type SliceActivities = ReturnType<typeof createSliceActivities>;

/** The agent a worker's own options define (`model`, `systemPrompt`, `tools`, ...): `default`. */
function optionsAgent(deps: SliceDependencies): AgentDefinition {
  return defineAgent({
    name: DEFAULT_AGENT,
    ...(deps.systemPrompt !== undefined && { instructions: deps.systemPrompt }),
    model: deps.model,
    tools: deps.tools,
    ...(deps.toolSources && { toolSources: deps.toolSources }),
    ...(deps.limits && { limits: deps.limits }),
    ...(deps.completionPolicy && { completionPolicy: deps.completionPolicy }),
    ...(deps.compactionThreshold !== undefined && { compactionThreshold: deps.compactionThreshold }),
  });
}

/**
 * The worker's `limits` hold for its own model wherever an agent uses it: a model entry without limits of its own, of
 * the same id as the worker's model, takes them (one provider key, one limiter, whatever the agent).
 */
function withWorkerLimits(agent: AgentDefinition, deps: SliceDependencies): AgentDefinition {
  const limits = deps.limits;
  if (!limits || !agent.models.some((m) => !m.limits && m.model.id === deps.model.id)) return agent;
  return {
    ...agent,
    models: agent.models.map((m) => (!m.limits && m.model.id === deps.model.id ? { ...m, limits } : m)),
  };
}

/** What every attempt of an agent's slices shares, derived once per definition. */
function agentRuntime(deps: SliceDependencies, given: AgentDefinition, emit: SliceRuntime['emit']): SliceRuntime {
  const agent = withWorkerLimits(given, deps);
  const first = agent.models[0]!;
  const agentDeps: SliceDependencies = {
    ...deps,
    model: first.model,
    tools: agent.tools,
    toolSources: agent.toolSources,
    systemPrompt: agent.instructions,
    limits: first.limits,
    completionPolicy: agent.completionPolicy,
    compactionThreshold: agent.compactionThreshold,
  };
  const toolsFor = treeTools(new Map(agent.tools.map((t) => [t.name, t])), agent.toolSources);
  return {
    deps: agentDeps,
    agent,
    toolsFor,
    policy: { ...DEFAULT_COMPLETION_POLICY, ...agent.completionPolicy },
    compaction: { threshold: agent.compactionThreshold ?? 0.75, window: first.model.contextWindow },
    emit,
    io: createDispatch(agentDeps, toolsFor, emit),
    classify:
      (tools) =>
      (name: string): ToolCallKind => {
        if (BUILTIN_TOOL_NAMES.has(name)) return 'builtin';
        const tool = tools.get(name);
        return tool ? (tool.sync ? 'sync' : 'async') : 'unknown';
      },
  };
}
