/**
 * infinity-temporal: LLM agents as stackless coroutines on Temporal.
 * This module is the public API and nothing else.
 *
 * Two subpaths hold parts of it, and are their preferred homes: `infinity-temporal/rap` (tools in other processes
 * over RAP: the callback gateway, its tokens, RAP toolsets, the tool-server SDK, the wire types) and
 * `infinity-temporal/testing` (`ScriptedModel`, `SimulatedModel`, `InMemoryConversationStore`). The root exports
 * their names too, as it always has, so existing imports keep working; new code should import them from the subpath.
 */
export type {
  AgentStatus,
  DisplaySegment,
  DropReason,
  HistoryItem,
  InputContent,
  InputMessage,
  PendingCall,
  PendingPrompt,
  StagedRef,
  StoredItem,
  SyntheticKind,
  ThreadEvent,
  ThreadKind,
  ThreadStatus,
  TokenUsage,
  ToolResultContent,
} from './core/types';
export { addUsage } from './core/types';
import * as generalTexts from './core/texts';
import * as sleepFamily from './core/builtins/sleep';
import * as subscriptionFamily from './core/builtins/subscriptions';
import * as threadFamily from './core/builtins/threads';
const { SLEEP_TOOLS: _s, validateSleepTool: _vs, ...sleepTexts } = sleepFamily;
const { SUBSCRIPTION_TOOLS: _u, validateSubscriptionTool: _vu, ...subscriptionTexts } = subscriptionFamily;
const { THREAD_TOOLS: _t, validateThreadTool: _vt, ...threadTexts } = threadFamily;
/** Every text the model reads that the runtime writes (the original runtime's wording): general, and each built-in tool family's. */
export const texts = { ...generalTexts, ...threadTexts, ...subscriptionTexts, ...sleepTexts };
export { BUILTIN_TOOLS, BUILTIN_TOOL_NAMES, type BuiltinToolSpec } from './core/builtins';

export {
  ModelStreamEndedError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  type ToolSpec,
} from './model/provider';
export {
  modelFromSpec,
  modelFromEnv,
  ModelConfigError,
  MODEL_PROVIDERS,
  PROVIDER_ENV,
  type ModelFromSpecOptions,
  type ModelProviderName,
} from './model/registry';
export { contextWindowOf } from './model/context-windows';
// Preferred home: `infinity-temporal/testing` (with `InMemoryConversationStore`).
export * from './testing';
export { aiSdkModel, type AiSdkModelOptions } from './model/ai-sdk';

export {
  ArchiveLimitError,
  CommitConflictError,
  MAX_ARCHIVED_RANGES,
  type ConversationStore,
  type ThreadRecord,
  type ArchivedRange,
  type NewThreadRecord,
  type CommitRequest,
  type Summary,
  type NewSummary,
} from './store/conversation-store';
export { InMemoryConversationStore } from './store/memory';
export { SqliteConversationStore, type SqliteStoreOptions } from './store/sqlite';
export { PostgresConversationStore, type PostgresStoreOptions } from './store/postgres';
export { openConversationStore, type OpenStoreOptions } from './store/open';
export { StoreFileLostError, type StoreFileChange, type StoreFileRole } from './store/file-guard';

export {
  defineTool,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolSource,
  type JsonSchemaObject,
} from './tools/tool';
export {
  toolResult,
  subscriptionStart,
  subscriptionEvent,
  userText,
  type CallRef,
  type ToolResultOptions,
} from './tools/messages';

export { DEFAULT_COMPLETION_POLICY, type CompletionPolicy } from './activities/completion';
export {
  agentCatalog,
  defineAgent,
  type AgentCatalog,
  type AgentDefinition,
  type AgentInit,
  type AgentResolver,
  type AgentThread,
  type ModelRoute,
} from './activities/agents';
export { DEFAULT_AGENT, type SliceAgent, type AgentUnavailable } from './core/agents';
export {
  createAgentWorker,
  DEFAULT_WORKFLOW_TASK_SLOTS,
  threadWorkflowsPath,
  type AgentWorker,
  type AgentWorkerOptions,
  type WorkerDeployment,
} from './worker/create-worker';
export type { ResourceTargets } from './worker/resource-targets';
export { LocalEventHub, type ThreadEventListener } from './events/event-hub';
export {
  resolveTracing,
  tracingFromEnv,
  DEFAULT_SERVICE_NAME,
  type TracingOption,
  type TracingOptions,
} from './tracing/config';
export { installTracing, installedTracing, type Tracing } from './tracing/install';
export { tracingClientInterceptors, tracingWorkflowModules } from './tracing/interceptors';
export { SLICE_ATTRIBUTES, type SliceOutcome } from './activities/slice-tracing';

export {
  AgentClient,
  type AgentClientOptions,
  type DeliverOptions,
  type StartThreadOptions,
  type SendUserTextOptions,
  type WaitForIdleOptions,
  type ThreadFilter,
  type ThreadSummary,
} from './client/agent-client';
export { ThreadHandle, type ThreadEventsOptions } from './client/thread-handle';
export type { Followed, FollowOptions } from './client/follow';
export { FORKED_FROM, type ForkAt, type ForkThreadOptions } from './client/fork';
export { type RewindResult, type RewindThreadOptions } from './client/rewind';
export {
  migrationQuery,
  type MigratedThread,
  type MigrateOptions,
  type MigrateProgress,
  type MigrateReport,
} from './client/migrate';
export { type DeliveryResult, DEFAULT_MAX_INPUT_BYTES } from './inbox/deliver';
export { STAGE_THRESHOLD_BYTES, DEFAULT_MAX_STAGED_INPUT_BYTES, type InputLimits } from './inbox/staging';
export {
  InvalidInputError,
  PayloadTooLargeError,
  ThreadClosedError,
  ThreadBusyError,
  TemporalUnavailableError,
  ThreadNotFoundError,
  ThreadTimeoutError,
} from './inbox/errors';
export { DEFAULT_INPUT_LIMITS, inputLimitViolation, type InputShapeLimits } from './core/validate';
export { DEFAULT_PRIORITY_KEYS, type ThreadPriority } from './core/priority';
export { THREAD_WORKFLOW_TYPE, searchAttributes } from './workflows/definitions';
export type { ThreadOptions } from './workflows/contract';

export { startDevServer, type DevServer, type DevServerOptions } from './devserver/server';
export { EncryptionCodec, ENCRYPTED_ENCODING, type EncryptionKeys } from './codec/encryption-codec';
export {
  startCodecServer,
  loopbackOrigins,
  uiOrigins,
  generateCodecToken,
  type CodecServer,
  type CodecServerOptions,
} from './codec/codec-server';
export { DEFAULT_LISTENER_LIMITS, type ListenerLimits } from './http/listener';
export type { AnswerChoiceOptions } from './client/choice-url';
export { EventLog, type LoggedEvent, type Replay } from './events/event-log';
export { startEventServer, type EventServer, type EventServerOptions } from './events/event-server';
export { eventsCapability, generateEventsToken } from './events/events-auth';
export { remoteThreadEvents, EventStreamError, type LiveEvent, type RemoteEventsOptions } from './events/live-events';
export { buildStatusDemoTool, type BuildStatusDemoOptions } from './tools/demo';
export { type ToolLifecycle } from './tools/tool';
// Preferred home: `infinity-temporal/rap` (the gateway, tokens, toolsets, tool-server SDK, wire types).
export * from './rap';
export {
  startRemoteTools,
  callbackKeysFromEnv,
  type RemoteTools,
  type RemoteToolsOptions,
} from './worker/remote-tools';
export {
  connectMcpTools,
  formatMcpResult,
  type McpServerConfig,
  type McpStdioServerConfig,
  type McpHttpServerConfig,
  type McpTools,
  type McpToolsOptions,
} from './mcp/mcp-tools';
export { findTemporalCli, TemporalCliNotFoundError } from './devserver/cli';
export { startLocalSystem, type LocalSystem, type LocalSystemOptions } from './local-system';
export { installMetricsRuntime, type MetricsEndpointOptions } from './worker/metrics';
export { workerLogger } from './worker/logger';
export { METRICS } from './core/metric-names';
// Replay-evals and outcome scores (docs/evals.md).
export * from './evals';
// Interleaving experiments (docs/experiments.md).
export * from './experiments';
