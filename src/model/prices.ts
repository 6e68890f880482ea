/**
 * Model prices for money budgets (issue 27 §1): US dollars per million tokens, by model id. A slice's cost is its
 * usage times its model's prices; a model the table does not know costs nothing (its tokens still count, and the
 * ledger counts it as an unpriced slice). Prices change: a worker passes its own table (`createAgentWorker({ prices
 * })`), whose entries come before the shipped ones.
 */
import type { SpendAmount } from '../core/budget';
import type { TokenUsage } from '../core/types';

/** USD per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Cached input tokens, when the provider reports them. @default `input` */
  cachedInput?: number;
}

/**
 * Model id (or id prefix: `gpt-4o` prices `gpt-4o-2024-08-06` too; the longest matching prefix wins; a
 * `provider:` prefix such as `anthropic:` is ignored; the prefix must end where the id has a separator, so `o3` does not price `o30`) → price.
 */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices (USD per million tokens) of common models, as published by Anthropic and OpenAI in 2025. Pass your own
 * table for negotiated prices, newer models or other providers.
 */
export const DEFAULT_PRICES: PriceTable = {
  // Anthropic
  'claude-opus-4': { input: 15, output: 75, cachedInput: 1.5 },
  'claude-opus-4-5': { input: 5, output: 25, cachedInput: 0.5 },
  'claude-sonnet-4': { input: 3, output: 15, cachedInput: 0.3 },
  'claude-3-7-sonnet': { input: 3, output: 15, cachedInput: 0.3 },
  'claude-3-5-sonnet': { input: 3, output: 15, cachedInput: 0.3 },
  'claude-haiku-4-5': { input: 1, output: 5, cachedInput: 0.1 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cachedInput: 0.08 },
  'claude-3-haiku': { input: 0.25, output: 1.25, cachedInput: 0.03 },
  // OpenAI
  'gpt-4o': { input: 2.5, output: 10, cachedInput: 1.25 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 },
  'gpt-4.1': { input: 2, output: 8, cachedInput: 0.5 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cachedInput: 0.1 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4, cachedInput: 0.025 },
  'gpt-5': { input: 1.25, output: 10, cachedInput: 0.125 },
  'gpt-5-mini': { input: 0.25, output: 2, cachedInput: 0.025 },
  'gpt-5-nano': { input: 0.05, output: 0.4, cachedInput: 0.005 },
  o1: { input: 15, output: 60, cachedInput: 7.5 },
  'o1-mini': { input: 1.1, output: 4.4, cachedInput: 0.55 },
  o3: { input: 2, output: 8, cachedInput: 0.5 },
  'o3-mini': { input: 1.1, output: 4.4, cachedInput: 0.55 },
  'o4-mini': { input: 1.1, output: 4.4, cachedInput: 0.275 },
};

/** The price of `modelId`: `overrides` first, then {@link DEFAULT_PRICES}; exact id, else the longest prefix. */
export function priceOf(modelId: string, overrides: PriceTable = {}): ModelPrice | undefined {
  // The provider prefix as a spec (`anthropic:`) or the AI SDK (`anthropic.messages:`, `openai.chat:`) writes it; a
  // prefix with digits is part of a model id (Bedrock's `anthropic.claude-…-v1:0`), and stays.
  const id = modelId.replace(/^[a-z]+(?:[.-][a-z]+)*:/, '');
  for (const table of [overrides, DEFAULT_PRICES]) {
    // The id as the model gives it first: a table keyed by `model.id` itself (`anthropic.messages:claude-…`).
    if (Object.hasOwn(table, modelId)) return table[modelId];
    if (Object.hasOwn(table, id)) return table[id];
    let best: string | undefined;
    for (const key of Object.keys(table))
      if (id.startsWith(key) && /^[-.:@_/]/.test(id.slice(key.length) || '-') && (!best || key.length > best.length))
        best = key;
    if (best !== undefined) return table[best];
  }
  return undefined;
}

/** Tokens of a usage report, total derived when the provider gave only input and output. */
export function tokensOf(u: TokenUsage | undefined): {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
} {
  const inputTokens = u?.inputTokens ?? 0;
  const outputTokens = u?.outputTokens ?? 0;
  return { inputTokens, outputTokens, totalTokens: u?.totalTokens ?? inputTokens + outputTokens };
}

/** What a slice's usage adds to its budgets' spend. */
export function spendOf(usage: TokenUsage | undefined, price: ModelPrice | undefined): SpendAmount {
  const t = tokensOf(usage);
  const usd = price ? (t.inputTokens * price.input + t.outputTokens * price.output) / 1_000_000 : 0;
  return { ...t, usd, unpriced: !price };
}
