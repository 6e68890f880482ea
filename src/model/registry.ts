/**
 * Picks a model from one string, e.g. `INFINITY_MODEL=anthropic:claude-sonnet-4-5`, so that a deployment changes
 * models without code. Keys come from each provider's usual environment variables; a missing one fails here, at
 * start-up, rather than on the first request hours later.
 */
import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { SharedV3ProviderOptions } from '@ai-sdk/provider';
import { aiSdkModel } from './ai-sdk';
import { ModelConfigError } from './config-error';
import { contextWindowOf } from './context-windows';
import type { ModelProvider } from './provider';
import { SimulatedModel } from './simulated';

export { ModelConfigError };

export const MODEL_PROVIDERS = [
  'anthropic',
  'openai',
  'openai-chat',
  'bedrock',
  'openai-compatible',
  'simulated',
] as const;
export type ModelProviderName = (typeof MODEL_PROVIDERS)[number];

export interface ModelFromSpecOptions {
  /** Where keys and overrides are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Overrides the context window. @default `INFINITY_CONTEXT_WINDOW`, else the known window of the model */
  contextWindow?: number;
  /** A fetch implementation for the provider's HTTP client. */
  fetch?: typeof globalThis.fetch;
}

/** What each provider reads from the environment; shown in errors and by `describeModelEnv`. */
export const PROVIDER_ENV: Record<Exclude<ModelProviderName, 'simulated'>, { key: string[]; optional: string[] }> = {
  anthropic: { key: ['ANTHROPIC_API_KEY'], optional: ['ANTHROPIC_BASE_URL', 'INFINITY_THINKING_BUDGET'] },
  openai: { key: ['OPENAI_API_KEY'], optional: ['OPENAI_BASE_URL', 'INFINITY_REASONING_EFFORT'] },
  'openai-chat': { key: ['OPENAI_API_KEY'], optional: ['OPENAI_BASE_URL'] },
  bedrock: {
    key: ['AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY', 'AWS_BEARER_TOKEN_BEDROCK'],
    optional: ['AWS_REGION', 'AWS_SESSION_TOKEN', 'BEDROCK_BASE_URL', 'INFINITY_THINKING_BUDGET'],
  },
  'openai-compatible': { key: ['INFINITY_BASE_URL'], optional: ['INFINITY_API_KEY', 'INFINITY_MODEL_IMAGES'] },
};

function parseSpec(spec: string): { provider: ModelProviderName; modelId: string } {
  const colon = spec.indexOf(':');
  const provider = (colon < 0 ? spec : spec.slice(0, colon)).trim();
  const modelId = colon < 0 ? '' : spec.slice(colon + 1).trim();
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ModelConfigError(
      `unknown model provider '${provider}' in '${spec}'; use one of: ${MODEL_PROVIDERS.join(', ')}`,
    );
  }
  if (provider !== 'simulated' && modelId === '') {
    throw new ModelConfigError(`'${spec}' names no model; write it as ${provider}:<model id>`);
  }
  return { provider: provider as ModelProviderName, modelId };
}

function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ModelConfigError(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

function required(env: NodeJS.ProcessEnv, name: string, spec: string): string {
  const v = env[name];
  if (!v) throw new ModelConfigError(`${spec} needs ${name}; set it in the environment`);
  return v;
}

/**
 * Builds a {@link ModelProvider} from `provider:model`:
 * `anthropic:<id>` (Messages API), `openai:<id>` (Responses API), `openai-chat:<id>` (Chat Completions),
 * `bedrock:<id>` (Converse), `openai-compatible:<id>` (any Chat Completions endpoint at `INFINITY_BASE_URL`),
 * `simulated` (no network). Parallel tool calls are switched off where the API allows; elsewhere the slice keeps
 * the first call of a round.
 */
export function modelFromSpec(spec: string, options: ModelFromSpecOptions = {}): ModelProvider {
  const env = options.env ?? process.env;
  const { provider, modelId } = parseSpec(spec);
  const contextWindow =
    options.contextWindow ?? positiveInt(env, 'INFINITY_CONTEXT_WINDOW') ?? contextWindowOf(provider, modelId);
  const fetch = options.fetch;
  const thinkingBudget = positiveInt(env, 'INFINITY_THINKING_BUDGET');
  const withWindow = (model: Parameters<typeof aiSdkModel>[0], providerOptions: SharedV3ProviderOptions) =>
    aiSdkModel(model, { contextWindow, providerOptions });

  switch (provider) {
    case 'simulated':
      // A pause between deltas makes the stream watchable (demos, live-event tests).
      return new SimulatedModel({ chunkDelayMs: positiveInt(env, 'INFINITY_SIMULATED_DELAY_MS') ?? 0 });
    case 'anthropic': {
      const anthropic = createAnthropic({
        apiKey: required(env, 'ANTHROPIC_API_KEY', spec),
        baseURL: env.ANTHROPIC_BASE_URL || undefined,
        fetch,
      });
      return withWindow(anthropic(modelId), {
        anthropic: {
          disableParallelToolUse: true,
          ...(thinkingBudget && { thinking: { type: 'enabled', budgetTokens: thinkingBudget } }),
        },
      });
    }
    case 'openai':
    case 'openai-chat': {
      const openai = createOpenAI({
        apiKey: required(env, 'OPENAI_API_KEY', spec),
        baseURL: env.OPENAI_BASE_URL || undefined,
        fetch,
      });
      const effort = env.INFINITY_REASONING_EFFORT;
      return withWindow(provider === 'openai' ? openai.responses(modelId) : openai.chat(modelId), {
        openai: {
          parallelToolCalls: false,
          ...(provider === 'openai' && effort && { reasoningEffort: effort, reasoningSummary: 'auto' }),
        },
      });
    }
    case 'bedrock': {
      const bearer = env.AWS_BEARER_TOKEN_BEDROCK;
      if (!bearer && !(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)) {
        throw new ModelConfigError(
          `${spec} needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK`,
        );
      }
      const bedrock = createAmazonBedrock({
        region: env.AWS_REGION || 'us-east-1',
        ...(bearer
          ? { apiKey: bearer }
          : {
              accessKeyId: env.AWS_ACCESS_KEY_ID,
              secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
              sessionToken: env.AWS_SESSION_TOKEN || undefined,
            }),
        baseURL: env.BEDROCK_BASE_URL || undefined,
        fetch,
      });
      return withWindow(bedrock(modelId), {
        ...(thinkingBudget && { bedrock: { reasoningConfig: { type: 'enabled', budgetTokens: thinkingBudget } } }),
      });
    }
    case 'openai-compatible': {
      const compatible = createOpenAICompatible({
        name: 'openai-compatible',
        baseURL: required(env, 'INFINITY_BASE_URL', spec),
        apiKey: env.INFINITY_API_KEY || undefined,
        includeUsage: true,
        fetch,
      });
      // Unknown models behind a compatible endpoint: images only when the deployment says so.
      return aiSdkModel(compatible.chatModel(modelId), {
        contextWindow,
        supportsImages: env.INFINITY_MODEL_IMAGES === '1',
      });
    }
  }
}

/** `INFINITY_MODEL` if set, else the simulated model (so demos run without keys). */
export function modelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelProvider {
  return modelFromSpec(env.INFINITY_MODEL || 'simulated', { env });
}
