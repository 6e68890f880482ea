/**
 * What a worker gives its slice activities (`createSliceActivities`, slice.ts): its store, model and tools, and the
 * optional parts around them. Its own module so that slice.ts and the attempt's phases (slice-attempt.ts) both read it
 * without importing each other.
 */
import type { ProviderLimits } from '../core/capacity';
import type { InputMessage, ThreadEvent } from '../core/types';
import type { PriceTable } from '../model/prices';
import type { ModelProvider } from '../model/provider';
import type { ConversationStore } from '../store/conversation-store';
import type { Tool, ToolLifecycle, ToolSource } from '../tools/tool';
import type { AgentCatalog } from './agents';
import type { CompletionPolicy } from './completion';
import type { SliceJobs } from './slice-jobs';
import type { SliceMetrics } from './slice-metrics';
import type { SliceTracing } from './slice-tracing';
import type { CapacityWakeups } from './capacity-wakeups';

export interface SliceDependencies {
  store: ConversationStore;
  model: ModelProvider;
  tools: readonly Tool[];
  /** Tools per agent tree, beside `tools` (RAP toolsets); a name `tools` or a built-in has is not taken from them. */
  toolSources?: readonly ToolSource[];
  /** Delivers a message to a thread's input queue; handed to tools as `ctx.send` (`toolName`: the sending tool's). */
  send(message: InputMessage, from?: { toolName: string }): Promise<void>;
  /** Receives live events; must not throw. */
  emit(event: ThreadEvent): void;
  /** Replaces the default system prompt (the thread-id suffix is always added). */
  systemPrompt?: string;
  completionPolicy?: Partial<CompletionPolicy>;
  /**
   * Fraction of the model's context window (`model.contextWindow`) above which a thread compacts itself
   * (default 0.75; 0 turns automatic compaction off).
   */
  compactionThreshold?: number;
  /** Told about interrupted calls, cancelled subscriptions and closed threads (RAP servers). */
  lifecycle?: readonly ToolLifecycle[];
  /** How often the slice heartbeats (default 1 s); heartbeats carry crash detection and cancellation. */
  heartbeatIntervalMs?: number;
  /** Counts slices, tokens and tool calls (default: none; `createAgentWorker` passes the SDK runtime's meter). */
  metrics?: SliceMetrics;
  /** One span per slice attempt (default: none; `createAgentWorker` passes one when tracing is on). */
  tracing?: SliceTracing;
  /** Slices handed off by a local activity wait here for their adopting activity. */
  jobs?: SliceJobs;
  /**
   * This worker's own task queue, where a local slice past its budget is adopted; without it a local slice runs to its
   * end within the local activity.
   */
  handoffQueue?: string;
  /**
   * Model prices for money budgets, before the shipped ones (`src/model/prices.ts`).
   * @default DEFAULT_PRICES only
   */
  prices?: PriceTable;
  /**
   * Provider limits shared by every worker on the same store (issue 27 §2; docs/budgets.md): requests and tokens per
   * minute and concurrency of this worker's model, under `limits.key`.
   * @default none (every slice calls its provider at once)
   */
  limits?: ProviderLimits;
  /**
   * Wakes threads refused for provider capacity when a grant is held for them (issue 41): without it, a refused thread
   * comes back on its timer. `createAgentWorker` passes one that signals through its client.
   */
  wakeups?: CapacityWakeups;
  /**
   * Where each slice finds its thread's agent (issue 40): without it, every thread runs `default`, the agent these
   * options define (`model`, `tools`, `systemPrompt`, ...).
   */
  agents?: AgentCatalog;
}
