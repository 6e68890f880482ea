/**
 * Any Vercel AI SDK language model (Anthropic, OpenAI, Bedrock, OpenAI-compatible, ...) as a {@link ModelProvider}.
 *
 * We call the provider-level `doStream` directly rather than `streamText`: the slice already owns the tool loop,
 * retries and validation, and wants the raw parts (one completion per call, tools without `execute`).
 */
import type {
  JSONValue,
  LanguageModelV3,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolResultOutput,
  SharedV3ProviderMetadata,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import type { ToolResultContent } from '../core/types';
import { APICallError } from '@ai-sdk/provider';
import {
  ModelStreamEndedError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
} from './provider';
import { reportFromHeaders } from './rate-limit-headers';

export interface AiSdkModelOptions {
  contextWindow?: number;
  /** False for models without image input. @default true */
  supportsImages?: boolean;
  /** Passed as `providerOptions` on every call, e.g. `{ anthropic: { disableParallelToolUse: true } }`. */
  providerOptions?: SharedV3ProviderOptions;
}

function toOutput(content: readonly ToolResultContent[]): LanguageModelV3ToolResultOutput {
  if (content.length === 1 && content[0]?.type === 'text') return { type: 'text', value: content[0].text };
  return {
    type: 'content',
    value: content.map((c) =>
      c.type === 'text'
        ? { type: 'text' as const, text: c.text }
        : { type: 'image-data' as const, data: c.data, mediaType: c.mediaType },
    ),
  };
}

function toMessage(m: ModelMessage): LanguageModelV3Message {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: m.text }] };
    case 'assistant':
      return { role: 'assistant', content: [{ type: 'text', text: m.text }] };
    case 'reasoning':
      return {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: m.text,
            providerOptions: m.providerMetadata as SharedV3ProviderOptions | undefined,
          },
        ],
      };
    case 'tool_call':
      return { role: 'assistant', content: [{ type: 'tool-call', toolCallId: m.id, toolName: m.name, input: m.args }] };
    case 'tool_result':
      return {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: m.id, toolName: m.name, output: toOutput(m.content) }],
      };
  }
}

/**
 * Bedrock (and Anthropic, historically) reject a conversation whose first message is the assistant's, which is where a
 * compaction summary sits (docs/semantics.md §12); a short user turn goes first then.
 */
export const SUMMARY_LEAD = 'Continue from this summary of the conversation so far.';

/** Builds the provider prompt; consecutive messages of one role are merged, as providers expect. */
export function toAiSdkPrompt(request: ModelRequest): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [{ role: 'system', content: request.system }];
  const first = request.messages[0];
  if (first && first.role !== 'user' && first.role !== 'tool_result')
    prompt.push({ role: 'user', content: [{ type: 'text', text: SUMMARY_LEAD }] });
  for (const m of request.messages) {
    const next = toMessage(m);
    const prev = prompt[prompt.length - 1];
    if (prev && prev.role === next.role && prev.role !== 'system') {
      (prev.content as unknown[]).push(...(next.content as unknown[]));
    } else {
      prompt.push(next);
    }
  }
  return prompt;
}

class AiSdkModel implements ModelProvider {
  readonly id: string;
  readonly contextWindow?: number;
  readonly supportsImages: boolean;

  constructor(
    private readonly model: LanguageModelV3,
    private readonly options: AiSdkModelOptions,
  ) {
    this.id = `${model.provider}:${model.modelId}`;
    this.contextWindow = options.contextWindow;
    this.supportsImages = options.supportsImages ?? true;
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const { stream, response } = await this.model.doStream({
      prompt: toAiSdkPrompt(request),
      tools: request.tools.map((t) => ({
        type: 'function' as const,
        name: t.name,
        description: t.description,
        inputSchema: t.parameters as Record<string, JSONValue>,
      })),
      abortSignal: signal,
      providerOptions: this.options.providerOptions,
    });
    const reasoning = new Map<string, ReasoningBlock>();
    const reader = stream.getReader();
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (e) {
          // Provider errors arrive as parts or with an HTTP status; a read that throws otherwise is the transport
          // (socket closed, body cut), which the SDK may wrap as "Failed to process successful response".
          if (signal.aborted || (APICallError.isInstance(e) && (e.statusCode ?? 0) >= 400)) throw e;
          throw new ModelStreamEndedError(e instanceof Error ? e.message : String(e), { cause: e });
        }
        if (next.done) throw new ModelStreamEndedError('the stream closed without a finish event');
        if (next.value.type === 'finish') {
          // The provider's rate-limit headers ride on the finish part: the capacity gate reads them (issue 41).
          const rateLimits = reportFromHeaders(response?.headers);
          for (const part of translate(next.value, reasoning))
            yield part.type === 'finish' && rateLimits ? { ...part, rateLimits } : part;
          return;
        }
        yield* translate(next.value, reasoning);
      }
    } finally {
      reader.releaseLock();
    }
  }
}

interface ReasoningBlock {
  text: string;
  metadata?: SharedV3ProviderMetadata;
}

function mergeMetadata(a: SharedV3ProviderMetadata | undefined, b: SharedV3ProviderMetadata): SharedV3ProviderMetadata {
  const out: SharedV3ProviderMetadata = { ...a };
  for (const [provider, values] of Object.entries(b)) out[provider] = { ...out[provider], ...values };
  return out;
}

function* translate(
  part: LanguageModelV3StreamPart,
  reasoning: Map<string, ReasoningBlock>,
): Generator<ModelStreamPart> {
  switch (part.type) {
    case 'text-delta':
      if (part.delta) yield { type: 'text-delta', text: part.delta };
      return;
    case 'reasoning-start':
      reasoning.set(part.id, { text: '', metadata: part.providerMetadata });
      return;
    case 'reasoning-delta': {
      const block = reasoning.get(part.id) ?? { text: '' };
      block.text += part.delta;
      // Anthropic sends the signature as a metadata-only delta; OpenAI puts the encrypted content on start/end.
      if (part.providerMetadata) block.metadata = mergeMetadata(block.metadata, part.providerMetadata);
      reasoning.set(part.id, block);
      if (part.delta) yield { type: 'reasoning-delta', text: part.delta };
      return;
    }
    case 'reasoning-end': {
      const block = reasoning.get(part.id) ?? { text: '' };
      reasoning.delete(part.id);
      const metadata = part.providerMetadata ? mergeMetadata(block.metadata, part.providerMetadata) : block.metadata;
      // Only blocks the provider signed or identified need to go back on the next turn.
      if (metadata) yield { type: 'reasoning', text: block.text, providerMetadata: metadata };
      return;
    }
    case 'tool-input-start':
      yield { type: 'tool-call-start', id: part.id, name: part.toolName };
      return;
    case 'tool-input-delta':
      yield { type: 'tool-call-delta', id: part.id, delta: part.delta };
      return;
    case 'tool-call':
      yield { type: 'tool-call', id: part.toolCallId, name: part.toolName, input: part.input };
      return;
    case 'finish':
      // Some providers emit `finish` when their stream merely ends; without a reason from the wire, the
      // provider's final event never came.
      if (part.finishReason.unified === 'other' && part.finishReason.raw === undefined) {
        throw new ModelStreamEndedError('the provider sent no final event');
      }
      yield {
        type: 'finish',
        usage: {
          inputTokens: part.usage.inputTokens.total,
          outputTokens: part.usage.outputTokens.total,
          totalTokens:
            part.usage.inputTokens.total !== undefined && part.usage.outputTokens.total !== undefined
              ? part.usage.inputTokens.total + part.usage.outputTokens.total
              : undefined,
        },
      };
      return;
    case 'error':
      throw part.error instanceof Error
        ? part.error
        : new Error(typeof part.error === 'string' ? part.error : JSON.stringify(part.error));
    default:
      return;
  }
}

/** Wraps an AI SDK language model (specification v3, as returned by `anthropic('...')`, `openai('...')`, ...). */
export function aiSdkModel(model: LanguageModelV3, options: AiSdkModelOptions = {}): ModelProvider {
  return new AiSdkModel(model, options);
}
