/**
 * infinity-temporal: LLM agents as stackless coroutines on Temporal.
 * This module is the public API and nothing else.
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
export { ScriptedModel, turnToParts, type ScriptedTurn, type ScriptedReply, type ScriptFn } from './model/scripted';
export { SimulatedModel, type SimulatedModelOptions } from './model/simulated';
export { aiSdkModel, type AiSdkModelOptions } from './model/ai-sdk';

export {
  CommitConflictError,
  type ConversationStore,
  type ThreadRecord,
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
export { ThreadHandle } from './client/thread-handle';
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
export * from './rap/wire';
export { CallbackTokens, newCallbackKey, type CallbackKeys, type TokenClaims, type TokenCheck } from './rap/tokens';
export { startRapGateway, type RapGateway, type RapGatewayOptions } from './rap/gateway';
export type { CallbackStateCheck } from './rap/callback-guard';
export { callbackStateOf, type CallbackCheckOptions } from './client/callback-check';
export type { CallbackState } from './core/callback-state';
export {
  loadRapToolsets,
  rapRefusedText,
  type RapServerConfig,
  type RapToolsets,
  type RapToolsetsOptions,
  type RapToolsetLoadError,
} from './rap/toolsets';
export {
  createRapToolServer,
  RapCallbackError,
  type RapCallContext,
  type RapResult,
  type RapSubscription,
  type RapToolHandler,
  type RapToolServer,
  type RapToolServerOptions,
} from './rap/tool-server';
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
