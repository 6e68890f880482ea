/**
 * What a provider's rate-limit headers say about an API key (issue 41), read from any answer — a streamed completion's
 * or a 429's. Anthropic: `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (reset: an RFC 3339 time; the
 * tokens figures are the most restrictive token limit in effect). OpenAI and compatible servers:
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (reset: a duration such as `1s`, `6m0s` or `20ms`). Both:
 * `retry-after` (seconds or an HTTP date) and `retry-after-ms`.
 */
import type { ProviderReport, ReportedAllowance } from '../core/capacity';

/** Headers as the AI SDK hands them over (lower-case names) or as a `Headers` object. */
export type HeaderSource = Record<string, string | undefined> | Headers | undefined;

function getter(headers: HeaderSource): (name: string) => string | undefined {
  if (!headers) return () => undefined;
  if (typeof (headers as Headers).get === 'function') return (n) => (headers as Headers).get(n) ?? undefined;
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return (n) => lower.get(n);
}

const number = (raw: string | undefined): number | undefined => {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
};

/** An OpenAI reset duration (`1s`, `6m0s`, `1h2m3.5s`, `20ms`) in ms, or a number of seconds. */
export function durationMs(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const plain = number(raw);
  if (plain !== undefined) return plain * 1000;
  let ms = 0;
  let matched = false;
  for (const m of raw.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    matched = true;
    const v = Number(m[1]);
    ms += m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : m[2] === 'm' ? v * 60_000 : v * 3_600_000;
  }
  return matched ? ms : undefined;
}

/** An RFC 3339 time (Anthropic's reset) as ms from `now`. */
function untilMs(raw: string | undefined, now: number): number | undefined {
  if (raw === undefined) return undefined;
  const t = Date.parse(raw);
  return Number.isFinite(t) ? Math.max(0, t - now) : durationMs(raw);
}

function allowance(limit?: number, remaining?: number, resetMs?: number): ReportedAllowance | undefined {
  if (limit === undefined && remaining === undefined) return undefined;
  return {
    ...(limit !== undefined && { limit }),
    ...(remaining !== undefined && { remaining }),
    ...(resetMs !== undefined && { resetMs }),
  };
}

/** The report in `headers`, or undefined when they hold no rate-limit figure. */
export function reportFromHeaders(headers: HeaderSource, now = Date.now()): ProviderReport | undefined {
  const get = getter(headers);
  const anthropic = (what: string) =>
    allowance(
      number(get(`anthropic-ratelimit-${what}-limit`)),
      number(get(`anthropic-ratelimit-${what}-remaining`)),
      untilMs(get(`anthropic-ratelimit-${what}-reset`), now),
    );
  const openAi = (what: string) =>
    allowance(
      number(get(`x-ratelimit-limit-${what}`)),
      number(get(`x-ratelimit-remaining-${what}`)),
      durationMs(get(`x-ratelimit-reset-${what}`)),
    );
  const requests = anthropic('requests') ?? openAi('requests');
  const tokens = anthropic('tokens') ?? anthropic('input-tokens') ?? openAi('tokens');
  const retryAfterMs = number(get('retry-after-ms')) ?? retryAfter(get('retry-after'), now);
  if (!requests && !tokens && retryAfterMs === undefined) return undefined;
  return {
    ...(requests && { requests }),
    ...(tokens && { tokens }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
}

function retryAfter(raw: string | undefined, now: number): number | undefined {
  if (raw === undefined) return undefined;
  const seconds = number(raw);
  if (seconds !== undefined) return Math.max(0, seconds * 1000);
  const t = Date.parse(raw);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** The report in a failed call's headers (the AI SDK's `APICallError.responseHeaders`). */
export function reportFromFailure(failure: unknown, now = Date.now()): ProviderReport | undefined {
  const headers = (failure as { responseHeaders?: Record<string, string> } | null)?.responseHeaders;
  return headers ? reportFromHeaders(headers, now) : undefined;
}
