/**
 * `createAgentWorker`: a Temporal worker that serves threads — the workflow bundle plus the slice activity bound
 * to a store, a model and tools. Any number of workers may serve one task queue; none keeps a thread resident.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { MetricMeter, PayloadCodec, VersioningBehavior } from '@temporalio/common';
import {
  NativeConnection,
  Runtime,
  Worker,
  type WorkerDeploymentOptions,
  type WorkerOptions,
} from '@temporalio/worker';
import { createSliceActivities } from '../activities/slice';
import {
  type AgentCatalog,
  type AgentDefinition,
  agentCatalog,
  type AgentResolver,
  defineAgent,
} from '../activities/agents';
import { DEFAULT_AGENT } from '../core/agents';
import type { PriceTable } from '../model/prices';
import { limitsProblem, type ProviderLimits } from '../core/capacity';
import { SliceJobs } from '../activities/slice-jobs';
import { capacityWakeups } from '../activities/capacity-wakeups';
import { capacitySignal } from '../workflows/definitions';
import { sliceMetrics } from '../activities/slice-metrics';
import { sliceTracing } from '../activities/slice-tracing';
import type { CompletionPolicy } from '../activities/completion';
import type { ThreadEvent } from '../core/types';
import type { ModelProvider } from '../model/provider';
import type { ConversationStore } from '../store/conversation-store';
import { deliverAnswering } from '../inbox/deliver';
import type { Tool, ToolLifecycle, ToolSource } from '../tools/tool';
import { LocalEventHub } from '../events/event-hub';
import { EventLog } from '../events/event-log';
import { type EventServer, type EventServerOptions, startEventServer } from '../events/event-server';
import type { TracingOption } from '../tracing/config';
import { tracingFor } from '../tracing/install';
import { mergeWorkerInterceptors, tracingClientInterceptors, tracingWorkerOptions } from '../tracing/interceptors';
import { type ResourceTargets, withResourceTargets } from './resource-targets';
import { SLICE_QUEUE_MARK } from './logger';
import {
  checkWorkflowSlots,
  DEFAULT_WORKFLOW_TASK_SLOTS,
  defaultWorkflowSlots,
  workflowCacheOf,
} from './workflow-slots';

export { DEFAULT_WORKFLOW_TASK_SLOTS };

/** Options of {@link createAgentWorker}. Only `connection`, `taskQueue`, `store` and `model` are required. */
export interface AgentWorkerOptions {
  /** The worker's connection to Temporal (`NativeConnection.connect({ address })`). */
  connection: NativeConnection;
  /** @default 'default' */
  namespace?: string;
  /** The task queue threads run on; clients start threads on the same one. */
  taskQueue: string;
  /** Where conversations live; every worker and client of a deployment shares one. */
  store: ConversationStore;
  /**
   * The model of the worker's own agent, `default` (`modelFromSpec`, `modelFromEnv`, or your own
   * {@link ModelProvider}): what every thread that names no agent runs on. Required unless `agents` is given (then
   * `defaultAgent`, or the first agent, serves such threads).
   */
  model?: ModelProvider;
  /**
   * More agents this worker hosts (issue 40; docs/agents.md), each from {@link defineAgent}: a thread started with
   * `agent: name` runs that one's instructions, models and tools; its children too, unless `spawn_thread` names
   * another its agent `spawns`. Every worker of a task queue should host the same agents (or resolve them).
   * @default none (every thread runs the agent the options above define)
   */
  agents?: readonly AgentDefinition[];
  /**
   * Definitions kept elsewhere (a database, a tenant's settings): asked at each slice with the thread's agent name,
   * before `agents`; a changed definition reaches the next slice without a restart. Undefined falls back to `agents`.
   * @default none
   */
  resolveAgent?: AgentResolver;
  /**
   * The agent of threads whose start names none, when `model` is not given.
   * @default the first of `agents`
   */
  defaultAgent?: string;
  /** The worker's tools, offered to every thread (after them, the built-in runtime tools). @default none */
  tools?: readonly Tool[];
  /**
   * Tools per agent tree (RAP toolsets, `startRemoteTools(...).toolSources`): asked at each slice with the thread's
   * root, so a tool server that was down at start, or changed its tools, reaches new threads without a restart.
   * @default none
   */
  toolSources?: readonly ToolSource[];
  /** Told about interrupted calls, cancelled subscriptions and closed threads (e.g. RAP toolsets). @default none */
  toolLifecycle?: readonly ToolLifecycle[];
  /** Receives live events of the slices this worker runs (e.g. a {@link LocalEventHub}'s `emit`). @default none */
  onEvent?: (event: ThreadEvent) => void;
  /** Replaces the default system prompt; the thread's id is always appended. @default texts.DEFAULT_SYSTEM_PROMPT */
  systemPrompt?: string;
  /** Model prices (USD per million tokens) for money budgets, before the shipped ones. @default prices.DEFAULT_PRICES */
  prices?: PriceTable;
  /**
   * Provider limits shared by every worker on the same store (issue 27 §2; docs/budgets.md): requests and tokens per
   * minute and concurrency of this worker's model, under `key` (default: the model's id). A slice that finds no
   * capacity waits, holding nothing, until a worker holds a grant for it and signals it (the key's wake-up list, in
   * weighted fair order), its workflow timer a fallback; a provider's 429 makes every worker on the key wait.
   * @default none (every slice calls its provider at once)
   * @example { key: 'anthropic:team-key', rpm: 1000, tpm: 80_000, concurrency: 20 }
   */
  limits?: ProviderLimits;
  /** Model retries and timeouts of a slice (docs/semantics.md §17). @default DEFAULT_COMPLETION_POLICY */
  completionPolicy?: Partial<CompletionPolicy>;
  /**
   * Fraction of the model's context window above which a thread compacts itself (0 = never). Needs
   * `model.contextWindow`.
   * @default 0.75
   */
  compactionThreshold?: number;
  /**
   * Workflows kept in the worker's cache. Idle threads beyond this are evicted and replayed from Temporal's history
   * when they wake; nothing idle needs to stay in memory. Size it to the threads whose tools answer within seconds
   * (decision 42), and to at least twice the workflow task slots (decision 74).
   * @default 100
   */
  maxCachedWorkflows?: number;
  /** A prebuilt workflow bundle (see `bundleThreadWorkflows`). @default bundled from this package's code at start */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Encodes every payload this worker writes to Temporal and decodes what it reads (e.g. an {@link EncryptionCodec});
   * clients need the same codec in their `Client`'s `dataConverter`.
   * @default none (payloads as JSON)
   */
  payloadCodec?: PayloadCodec;
  /**
   * Upper bound of one input a tool sends (`ctx.send`), serialized. Inputs over 128 KiB are staged in `store`; a
   * result over the bound is replaced by an error result the model reads, so its call is still answered.
   * @default 33554432 (32 MiB)
   */
  maxInputBytes?: number;
  /**
   * How the inputs tools send (`ctx.send`) travel: `by-kind` sends each by its kind's signal with the readable part
   * and the tool's name first (decision 62), only once every worker runs release 0.5 or later.
   * @default 'input'
   */
  signalNames?: 'input' | 'by-kind';
  /**
   * Worker Versioning (Temporal Worker Deployments): this worker serves one build of a deployment, and each thread's
   * workflow tasks go to the build its versioning behaviour names (docs/upgrading.md). Without it the worker is
   * unversioned and every workflow change must be replay-safe with `patched()`.
   * @default undefined (unversioned)
   */
  deployment?: WorkerDeployment;
  /**
   * Any other Temporal worker option. `maxConcurrentWorkflowTaskExecutions` defaults to
   * {@link DEFAULT_WORKFLOW_TASK_SLOTS} (Temporal's is 40), and at most half of `maxCachedWorkflows`, unless a `tuner`
   * is given: a slice runs inside its workflow task, and tasks a worker holds are served first come, first served, so
   * fewer slots leave the backlog in Temporal's queue, where task priority orders it (decision 60). More workflow task
   * slots than half the cache (given here or as a tuner's maximum) are refused with a `TypeError`: under a burst of
   * more active threads than the cache holds, Temporal would evict threads while their slice runs (decision 74).
   * @default none
   */
  workerOptions?: Partial<WorkerOptions>;
  /**
   * Take a new workflow task (and so start a slice) only while the machine's CPU and memory are under these
   * fractions, through Temporal's resource-based slot supplier; up to the same number of slots as without. Work held
   * back waits in Temporal's queue, where task priority serves user-facing threads first, and the headroom left lets
   * their turns run close to the speed they would alone: under a flood of background events a user's turn answered
   * 2.2× slower than alone with a 0.7 CPU target against 7.1× without (decision 64). The price is throughput at saturation
   * (a third on a 2-core machine), so it suits workers that serve people, not batch workers. Not with
   * `workerOptions.tuner`; `maxConcurrent*` options size the slots.
   * @default undefined (fixed slots)
   */
  resourceTargets?: ResourceTargets;
  /**
   * Serve live events over HTTP (server-sent events) for clients in other processes; see {@link EventServerOptions}.
   * Every stream needs `token` (made up when not given: {@link AgentWorker.eventsToken}) or a thread's capability
   * (`eventsCapability`).
   * @default none (events only in this process)
   */
  eventsEndpoint?: EventServerOptions & {
    /** Events buffered for late subscribers and reconnects, across all threads. @default 10000 */
    capacity?: number;
  };
  /**
   * Where the slices' `infinity_*` metrics go. The default, the Temporal SDK runtime's meter, exports them beside the
   * SDK's own when the runtime was installed with a metrics exporter (`installMetricsRuntime`); otherwise they are
   * dropped at no cost.
   * @default Runtime.instance().metricMeter
   */
  metricMeter?: MetricMeter;
  /**
   * OpenTelemetry traces (docs/operations.md, "Traces"): Temporal's client, workflow and activity interceptors, one
   * `Slice:<kind>` span per slice attempt, spans exported over OTLP/HTTP. `true` or options turn it on, `false` off;
   * left out, the standard variables decide (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
   * `OTEL_TRACES_EXPORTER=otlp`). With a prebuilt `workflowBundle`, bundle it with `tracingWorkflowModules()` as
   * `workflowInterceptorModules` to get the workflow's spans.
   * @default undefined (the environment decides; off when it says nothing)
   */
  tracing?: TracingOption;
}

/** One build of a Temporal Worker Deployment (`temporal worker deployment set-current-version` makes it current). */
export interface WorkerDeployment {
  /** The deployment's name, shared by all its builds (e.g. the service name). */
  name: string;
  /** This build (e.g. a git commit or image tag). */
  buildId: string;
  /**
   * Where a running thread's next workflow task goes once another build is current. `AUTO_UPGRADE`: to the current
   * build, so a deploy moves waiting threads forward and old builds drain within moments; this is safe because every
   * workflow change goes behind `patched()` and the replay gate checks it. `PINNED`: to the build that started the
   * thread, for as long as the thread lives — weeks for a thread waiting on a tool, and that build must keep running.
   * @default 'AUTO_UPGRADE'
   */
  defaultVersioningBehavior?: VersioningBehavior;
}

/** A worker made by {@link createAgentWorker}: {@link AgentWorker.run} it, {@link AgentWorker.shutdown} it. */
export interface AgentWorker {
  /** The Temporal worker of the task queue (the slices handed off to a regular activity run on a second one). */
  readonly worker: Worker;
  readonly taskQueue: string;
  /** The events endpoint, when `eventsEndpoint` was given. */
  readonly eventsUrl?: string;
  /** Its token (the one given, or the one made at start): clients pass it as `AgentClient`'s `eventsToken`. */
  readonly eventsToken?: string;
  /** Runs until {@link shutdown}; rejects if the worker fails. Calling it again returns the same promise. */
  run(): Promise<void>;
  /**
   * Temporal's graceful shutdown of the worker (slices in progress get `workerOptions.shutdownGraceTime`), then closes
   * the events endpoint and flushes traces; resolves once `run()` has.
   */
  shutdown(): Promise<void>;
}

/** The workflow entry file, as TypeScript source in development or compiled JavaScript in a build. */
export function threadWorkflowsPath(): string {
  const base = join(__dirname, '..', 'workflows', 'index');
  return existsSync(`${base}.ts`) ? `${base}.ts` : `${base}.js`;
}

/** The SDK's deployment options for {@link AgentWorkerOptions.deployment}. */
export function deploymentOptions(deployment: WorkerDeployment): WorkerDeploymentOptions {
  return {
    useWorkerVersioning: true,
    version: { deploymentName: deployment.name, buildId: deployment.buildId },
    defaultVersioningBehavior: deployment.defaultVersioningBehavior ?? 'AUTO_UPGRADE',
  };
}

/**
 * A Temporal worker that serves threads on `taskQueue`: the thread workflows, and their slices bound to `store`,
 * `model` and `tools`. Any number of workers, in any processes, may serve one task queue if they share the store;
 * none keeps a thread resident. Its promise rejects when the worker cannot start (no server, bad options).
 *
 * @example
 * ```ts
 * import { NativeConnection } from '@temporalio/worker';
 * import { createAgentWorker, modelFromSpec, SqliteConversationStore } from 'infinity-temporal';
 *
 * const worker = await createAgentWorker({
 *   connection: await NativeConnection.connect({ address: 'localhost:7233' }),
 *   taskQueue: 'agents',
 *   store: new SqliteConversationStore('conversations.sqlite'),
 *   model: modelFromSpec('anthropic:claude-sonnet-4-5'), // the key from ANTHROPIC_API_KEY
 *   tools: [getBuildStatus], // defineTool(...)
 *   eventsEndpoint: {}, // live events for clients in other processes: worker.eventsUrl, worker.eventsToken
 * });
 * await worker.run(); // until worker.shutdown()
 * ```
 */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const hosted = hostedAgents(options);
  // Before anything starts (the events endpoint listens below): at most half the cache busy, or Temporal evicts
  // threads whose slice runs (decision 74).
  const cached = workflowCacheOf(options);
  checkWorkflowSlots(options.workerOptions ?? {}, cached);
  const namespace = options.namespace ?? 'default';
  const dataConverter = options.payloadCodec ? { payloadCodecs: [options.payloadCodec] } : undefined;
  const tracing = tracingFor(options.tracing);
  // The client behind `ctx.send` and the gateway's deliveries: traced, so a tool's result continues the slice's trace.
  const client = new Client({
    connection: options.connection,
    namespace,
    ...(dataConverter && { dataConverter }),
    ...(tracing && { interceptors: tracingClientInterceptors() }),
  });
  const traced = tracing && tracingWorkerOptions(tracing, !options.workflowBundle);
  let onEvent = options.onEvent ?? (() => {});
  let events: EventServer | undefined;
  if (options.eventsEndpoint) {
    const hub = new LocalEventHub({ remember: false }); // the log keeps the slices in progress
    const log = new EventLog(hub, options.eventsEndpoint.capacity);
    events = await startEventServer(log, options.eventsEndpoint);
    const downstream = onEvent;
    onEvent = (e) => {
      hub.emit(e);
      downstream(e);
    };
  }
  // Slices that outlive their local activity's budget are adopted here, on a queue only this process polls.
  const jobs = new SliceJobs();
  const handoffQueue = `${options.taskQueue}${SLICE_QUEUE_MARK}${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  // Threads refused for provider capacity wait on their key's wake-up list; this worker wakes those it holds grants for.
  const wakeups = capacityWakeups(
    options.store.capacity,
    (id, key) => client.workflow.getHandle(id).signal(capacitySignal, { key }),
    (what, e) => Runtime.instance().logger.warn(`provider limits: ${what} failed`, { error: String(e) }),
  );
  const activities = createSliceActivities({
    wakeups,
    jobs,
    handoffQueue,
    store: options.store,
    model: hosted.model,
    agents: hosted.catalog,
    tools: options.tools ?? [],
    ...(options.toolSources && { toolSources: options.toolSources }),
    send: async (message, from) => {
      const limits = {
        store: options.store,
        ...(options.maxInputBytes !== undefined && { maxBytes: options.maxInputBytes }),
      };
      await deliverAnswering(client, message, limits, {
        signalNames: options.signalNames ?? 'input',
        ...(from && { toolName: from.toolName }),
      });
    },
    emit: onEvent,
    metrics: sliceMetrics(options.metricMeter ?? Runtime.instance().metricMeter),
    ...(tracing && { tracing: sliceTracing(tracing.tracer, hosted.model.id) }),
    systemPrompt: options.systemPrompt,
    ...(options.prices && { prices: options.prices }),
    ...(options.limits && { limits: checkedLimits(options.limits) }),
    completionPolicy: options.completionPolicy,
    compactionThreshold: options.compactionThreshold,
    ...(options.toolLifecycle && { lifecycle: options.toolLifecycle }),
  });
  const slots = defaultWorkflowSlots(cached);
  let worker: Worker;
  let adopter: Worker;
  try {
    worker = await Worker.create({
      connection: options.connection,
      namespace,
      taskQueue: options.taskQueue,
      activities,
      ...(options.workflowBundle
        ? { workflowBundle: options.workflowBundle }
        : { workflowsPath: threadWorkflowsPath() }),
      maxCachedWorkflows: cached,
      ...(!options.workerOptions?.tuner && !options.resourceTargets && { maxConcurrentWorkflowTaskExecutions: slots }),
      ...(options.deployment && { workerDeploymentOptions: deploymentOptions(options.deployment) }),
      ...(dataConverter && { dataConverter }),
      ...(options.resourceTargets
        ? withResourceTargets(options.resourceTargets, slots, options.workerOptions)
        : options.workerOptions),
      ...(traced && {
        interceptors: mergeWorkerInterceptors(traced.interceptors, options.workerOptions?.interceptors),
        sinks: { ...options.workerOptions?.sinks, ...traced.sinks },
      }),
    });
    // Unversioned on purpose: it only ever runs slices this very process started, whatever build the thread is on.
    adopter = await Worker.create({
      connection: options.connection,
      namespace,
      taskQueue: handoffQueue,
      activities: { adoptSlice: activities.adoptSlice },
      ...(dataConverter && { dataConverter }),
      ...(traced && { interceptors: { activity: traced.interceptors.activity } }),
      ...(options.workerOptions?.maxConcurrentActivityTaskExecutions !== undefined && {
        maxConcurrentActivityTaskExecutions: options.workerOptions.maxConcurrentActivityTaskExecutions,
      }),
    });
  } catch (e) {
    wakeups.close();
    await events?.close();
    throw e;
  }
  // A restarted worker has no timer of its own for threads left on its keys' wake-up lists: a first dispatch of each
  // key it serves wakes them (else their fallback timers would, later).
  for (const [key, limits] of servedLimits(options, hosted.model.id)) wakeups.waiting(key, limits);
  let running: Promise<void> | undefined;
  return {
    worker,
    taskQueue: options.taskQueue,
    ...(events && { eventsUrl: events.url, eventsToken: events.token }),
    run() {
      running ??= (async () => {
        const stopBoth = () => {
          for (const w of [worker, adopter]) if (w.getState() === 'RUNNING') w.shutdown();
        };
        // Either worker failing stops the other: a thread's slices need both.
        const runs = [worker.run(), adopter.run()].map((p) => p.catch((e: unknown) => (stopBoth(), Promise.reject(e))));
        const settled = await Promise.allSettled(runs);
        wakeups.close();
        jobs.abandonAll('the worker shut down');
        const failed = settled.find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
      })();
      return running;
    },
    async shutdown() {
      for (const w of [worker, adopter]) if (w.getState() === 'RUNNING') w.shutdown();
      await running;
      wakeups.close();
      await events?.close();
      await tracing?.flush().catch(() => undefined);
    },
  };
}

/** The limiter keys this worker's models serve under: its own `limits`, and each agent model's own. */
function servedLimits(options: AgentWorkerOptions, modelId: string): Map<string, ProviderLimits> {
  const out = new Map<string, ProviderLimits>();
  if (options.limits) out.set(options.limits.key ?? modelId, options.limits);
  for (const agent of options.agents ?? [])
    for (const m of agent.models) if (m.limits) out.set(m.limits.key ?? m.model.id, m.limits);
  return out;
}

/**
 * The worker's agents (issue 40): its own options as `default` when `model` is given, else `defaultAgent` (or the
 * first of `agents`) serves threads that name none. Checked before anything starts.
 */
function hostedAgents(options: AgentWorkerOptions): { model: ModelProvider; catalog: AgentCatalog } {
  const agents = options.agents ?? [];
  if (!options.model && agents.length === 0)
    throw new TypeError('createAgentWorker: give `model` (the default agent) or `agents`');
  if (options.model && options.defaultAgent !== undefined)
    throw new TypeError('createAgentWorker: `defaultAgent` names the default agent only when `model` is not given');
  if (options.limits) checkedLimits(options.limits);
  const own = options.model
    ? defineAgent({
        name: DEFAULT_AGENT,
        model: options.model,
        ...(options.systemPrompt !== undefined && { instructions: options.systemPrompt }),
        ...(options.tools && { tools: options.tools }),
        ...(options.toolSources && { toolSources: options.toolSources }),
        ...(options.limits && { limits: options.limits }),
        ...(options.completionPolicy && { completionPolicy: options.completionPolicy }),
        ...(options.compactionThreshold !== undefined && { compactionThreshold: options.compactionThreshold }),
      })
    : undefined;
  const fallback = own ?? options.defaultAgent ?? agents[0]!.name;
  const catalog = agentCatalog({
    agents,
    fallback,
    ...(options.resolveAgent && { resolveAgent: options.resolveAgent }),
  });
  const model = own?.models[0]?.model ?? (agents.find((a) => a.name === fallback) ?? agents[0]!).models[0]!.model;
  return { model, catalog };
}

/** The `limits` option, checked: a wrong one fails the worker's start, not its first slice. */
function checkedLimits(limits: ProviderLimits): ProviderLimits {
  const problem = limitsProblem(limits);
  if (problem) throw new TypeError(`createAgentWorker: ${problem}`);
  return limits;
}
