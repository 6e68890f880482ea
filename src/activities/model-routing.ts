/**
 * Model routing (issue 40 §4, docs/agents.md "Model routing"): an agent's models are an ordered list; a slice runs on
 * the first, and a round moves on to the next model only when the one before is unavailable past its retry policy.
 * This module decides what "unavailable" is, in one place, and prices a slice whose rounds ran on more than one model.
 *
 * Routes (the failure is the model's or its key's, and the next model has its own):
 * - server errors (HTTP 5xx, Anthropic's 529 `overloaded_error`, an `overloaded` error event) and HTTP 408;
 * - no first part within the initiate timeout, or a stream that ended before any part;
 * - rate limited (HTTP 429) past the retry policy, or its limits key closed longer than `closedForMs`
 *   ({@link KeyClosed}, thrown by the capacity gate);
 * - HTTP 401, 403 and 404: the model's key, its permissions or its id are wrong. That is a configuration problem of
 *   that model alone (the next one has its own key and id), so serving the thread from the next one is what an
 *   operator who listed it wants; the info event names the failure so it is not silent.
 *
 * Does not route: any other 4xx (400 bad request, 413, 422: the request itself is refused, and the same conversation
 * would most likely be refused by the next model too, or worse, hide a bug behind a model switch), and any failure
 * after part of the round arrived (the model was serving: that failure is the round's, with its partial output, as
 * without routing). Such failures end the slice with its error reply, as today.
 */
import { mergeModelAmounts, type ModelSpendAmount, type SpendAmount } from '../core/budget';
import type { TokenUsage } from '../core/types';
import { ModelStreamEndedError } from '../model/provider';
import type { PriceTable } from '../model/prices';
import { sliceSpend } from './budget-check';
import { KeyClosed } from './capacity-gate';
import { isRateLimit, messageOf, statusOf, StreamTimeout } from './retry';

export { KeyClosed } from './capacity-gate';

/**
 * Why a failed round's model is unavailable, so the next model may serve the same round; undefined when the failure
 * stays this model's (the slice ends with it). `received`: part of the failed attempt had arrived.
 */
export function unavailableReason(failure: unknown, received: boolean): string | undefined {
  if (failure instanceof KeyClosed) return failure.message;
  if (received) return undefined;
  if (failure === undefined || failure instanceof ModelStreamEndedError) return 'the stream ended before any output';
  if (failure instanceof StreamTimeout) return 'timed out initiating the request';
  const status = statusOf(failure);
  const msg = messageOf(failure).toLowerCase();
  if (status === 529 || msg.includes('overloaded')) return status ? `overloaded, HTTP ${status}` : 'overloaded';
  if (isRateLimit(failure)) return status ? `rate limited, HTTP ${status}` : 'rate limited';
  if (status === undefined) return undefined;
  if (status >= 500) return `server error, HTTP ${status}`;
  if (status === 408) return 'request timeout, HTTP 408';
  if (status === 401 || status === 403) return `not authorized, HTTP ${status}`;
  if (status === 404) return 'model not found, HTTP 404';
  return undefined;
}

/** Usage of a slice's rounds per model, in the order the models served (one entry unless routing moved the slice). */
export type UsageByModel = { model: string; usage: TokenUsage }[];

/**
 * What a slice spent per model (issue 40: `usage --by-model`): {@link routedSpend}'s parts, one per model that served
 * rounds of it, each priced with its own prices (their sum is `routedSpend`'s). A slice without usage (it failed before
 * any round finished) is one entry, for the model that served it, with no tokens.
 */
export function routedSpendByModel(
  out: { model: string; usage?: TokenUsage; usageByModel: UsageByModel },
  prices?: PriceTable,
): ModelSpendAmount[] {
  if (out.usageByModel.length <= 1)
    return [{ model: out.usageByModel[0]?.model ?? out.model, amount: routedSpend(out, prices) }];
  return mergeModelAmounts(
    out.usageByModel.map(({ model, usage }) => ({ model, amount: sliceSpend(model, usage, prices) })),
  );
}

/**
 * What a slice spent: its usage priced with the model that served each round. One model (the common case) is exactly
 * `sliceSpend(model, usage)`; after a switch, each model's rounds are priced with its own prices and summed (the slice
 * counts as unpriced if any of its models has no price).
 */
export function routedSpend(
  out: { model: string; usage?: TokenUsage; usageByModel: UsageByModel },
  prices?: PriceTable,
): SpendAmount {
  if (out.usageByModel.length <= 1) return sliceSpend(out.usageByModel[0]?.model ?? out.model, out.usage, prices);
  const total: SpendAmount = { inputTokens: 0, outputTokens: 0, totalTokens: 0, usd: 0, unpriced: false };
  for (const { model, usage } of out.usageByModel) {
    const part = sliceSpend(model, usage, prices);
    total.inputTokens += part.inputTokens;
    total.outputTokens += part.outputTokens;
    total.totalTokens += part.totalTokens;
    total.usd += part.usd;
    total.unpriced ||= part.unpriced;
  }
  return total;
}
