/**
 * The small streaming interface every model sits behind. A provider turns one request into a stream of parts;
 * the slice owns turn buffering, retries and tool handling (docs/semantics.md §17), so providers stay thin.
 */
import type { ProviderReport } from '../core/capacity';
import type { TokenUsage, ToolResultContent } from '../core/types';

/** A message in provider-neutral form, projected from history (one content block each). */
export type ModelMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string }
  | { role: 'reasoning'; text: string; providerMetadata?: Record<string, unknown> }
  | { role: 'tool_call'; id: string; name: string; args: unknown }
  | { role: 'tool_result'; id: string; name: string; content: ToolResultContent[] };

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** One completion request: the thread's projected history and the tools it may call. */
export interface ModelRequest {
  /** The thread the completion is for (scripted models key on it); the AI SDK adapter does not send it. */
  threadId: string;
  /** The system prompt, with the thread's id appended (the original runtime's wording). */
  system: string;
  messages: ModelMessage[];
  /** The worker's tools and, for threads that have them, the built-in tools (`src/core/builtins`). */
  tools: ToolSpec[];
}

/** One part of a streamed completion. */
export type ModelStreamPart =
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  /** A complete reasoning block. Blocks with provider metadata (signatures) are kept in history. */
  | { type: 'reasoning'; text: string; providerMetadata?: Record<string, unknown> }
  | { type: 'tool-call-start'; id: string; name: string }
  | { type: 'tool-call-delta'; id: string; delta: string }
  /** A finished tool call; `input` is the raw JSON text of the arguments as the model produced it. */
  | { type: 'tool-call'; id: string; name: string; input: string }
  /** `rateLimits`: what the answer's rate-limit headers said about the API key (issue 41), when it had any. */
  | { type: 'finish'; usage?: TokenUsage; rateLimits?: ProviderReport };

/**
 * A model, as the slice uses it: one streamed completion per call, nothing else. Retries, turn buffering,
 * interruption and tool handling are the slice's (docs/architecture.md), so an implementation only maps a
 * {@link ModelRequest} to its API and the API's stream back to {@link ModelStreamPart}s. Ready-made: `modelFromSpec`
 * (Anthropic, OpenAI, Bedrock, OpenAI-compatible through the AI SDK), `aiSdkModel` for any AI SDK language model,
 * `SimulatedModel` and `ScriptedModel` for demos and tests.
 */
export interface ModelProvider {
  /** Shown in logs and the UI. */
  readonly id: string;
  /** Context window in tokens, when known (used by compaction). */
  readonly contextWindow?: number;
  /** False when the model takes no images: image results reach it as a text placeholder. @default true */
  readonly supportsImages?: boolean;
  /**
   * Streams one completion. A stream that ends without a `finish` part, or that throws, is a failed attempt
   * that the slice may retry. `signal` aborts the request when the slice is cancelled.
   */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart>;
}

/**
 * The transport ended before the provider's final event: the connection dropped, or the body ended early.
 * The slice discards the partial turn and retries (docs/semantics.md §17).
 */
export class ModelStreamEndedError extends Error {
  override readonly name = 'ModelStreamEndedError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`unexpected end of stream: ${detail}`, options);
  }
}
