/**
 * Mock providers that enforce a request limit per minute as real ones document it, over loopback HTTP in their real
 * wire protocol, so the runtime reaches them through the real client library (issue 41). Each answers a request past
 * its limit with `429`, the provider's error body and `retry-after` (whole seconds), and every answer carries the
 * provider's rate-limit headers:
 *
 * - `token-bucket` (Anthropic's documented algorithm, Messages API): a bucket of `rpm` requests, replenished
 *   continuously at `rpm` a minute up to its size; a request takes one or is refused. Headers
 *   `anthropic-ratelimit-requests-{limit,remaining,reset}` (reset: the RFC 3339 time the bucket is full again).
 * - `sliding-window` (the worst case, OpenAI Chat Completions wire): at most `rpm` requests accepted in any trailing
 *   60 s; `retry-after` is when the oldest of them leaves the window. Headers
 *   `x-ratelimit-{limit,remaining,reset}-requests` (reset: until the window is empty, as `12.5s`).
 *
 * `others` stands for another application on the same API key: it takes `others.rpm` requests a minute of the same
 * allowance (evenly spaced, from the server's start until `others.untilMs` after it), so the runtime, configured with the
 * key's full figures, finds less than it was told. `concurrency` adds a limit on requests in flight (429, retry-after 1).
 * Refused requests do not count against the limit. `stats.accepted` holds the time of every accepted request of the
 * runtime's (not the other application's), for rates over any window.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { anthropicDialect } from './anthropic';
import { openAiChatDialect } from './openai-chat';
import type { WireDialect } from './server';

export type LimitAlgorithm = 'token-bucket' | 'sliding-window';

export interface RateLimitedOptions {
  algorithm: LimitAlgorithm;
  /** Requests per minute the key allows. */
  rpm: number;
  concurrency?: number;
  /** Another application on the key. */
  others?: { rpm: number; untilMs?: number };
  /** Usage each completion reports. @default 400 in, 20 out */
  usage?: { input: number; output: number };
  /** Pause between the answer's frames. @default 20 ms */
  frameDelayMs?: number;
  /** Names each accepted request from its body (`stats.acceptedTags`): a test's own marker, a tenant say. */
  tagOf?: (body: string) => string | undefined;
}

export interface RateLimitedStats {
  requests: number;
  limited: number;
  /** Accepted requests of the runtime, by arrival time. */
  accepted: number[];
  /** What `tagOf` named each accepted request, in the order of `accepted`. */
  acceptedTags: (string | undefined)[];
  /** Refused requests, by arrival time. */
  refused: number[];
  othersAccepted: number;
  /** Time spent answering accepted requests, summed (ms). */
  answeringMs: number;
}

export interface RateLimitedProvider {
  /** Base URL for the client (`…/v1`). */
  baseUrl: string;
  /** The model spec and environment that reach it through the project's real client. */
  spec: string;
  env: Record<string, string>;
  stats: RateLimitedStats;
  startedAt: number;
  close(): Promise<void>;
}

/** The most requests accepted in any trailing 60 s among `times` (sorted). */
export function maxInAnyMinute(times: number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[j]! <= times[i]! - 60_000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/**
 * The least time a key allows `n` requests to be answered in, from a fresh key: the provider's algorithm's own bound
 * (a sliding window: a minute's allowance per minute; a token bucket: its size at once, then its rate) or the bound of
 * `concurrency` calls of `callMs` at once, whichever is longer.
 */
export function allowedDrainMs(
  algorithm: LimitAlgorithm,
  rpm: number,
  n: number,
  concurrency: number | undefined,
  callMs: number,
): number {
  const byCalls = concurrency === undefined ? callMs : Math.ceil(n / concurrency) * callMs;
  const byRate =
    n <= rpm ? 0 : algorithm === 'sliding-window' ? (Math.ceil(n / rpm) - 1) * 60_000 : ((n - rpm) * 60_000) / rpm;
  return Math.max(byCalls, byRate + callMs);
}

/** One limit's arithmetic: whether a request may go at `now` (taking it if so), and what to tell the client. */
interface Limit {
  take(now: number): boolean;
  remaining(now: number): number;
  retryAfterS(now: number): number;
  headers(now: number): Record<string, string>;
}

function tokenBucket(rpm: number): Limit {
  const rate = rpm / 60_000;
  let level = rpm;
  let at = Date.now();
  const fill = (now: number) => {
    level = Math.min(rpm, level + (now - at) * rate);
    at = Math.max(at, now);
  };
  return {
    take(now) {
      fill(now);
      if (level < 1) return false;
      level -= 1;
      return true;
    },
    remaining(now) {
      fill(now);
      return Math.floor(level);
    },
    retryAfterS(now) {
      fill(now);
      return Math.max(1, Math.ceil((1 - level) / rate / 1000));
    },
    headers(now) {
      fill(now);
      return {
        'anthropic-ratelimit-requests-limit': String(rpm),
        'anthropic-ratelimit-requests-remaining': String(Math.floor(level)),
        'anthropic-ratelimit-requests-reset': new Date(now + (rpm - level) / rate).toISOString(),
      };
    },
  };
}

function slidingWindow(rpm: number): Limit {
  const window: number[] = [];
  const expire = (now: number) => {
    while (window.length > 0 && window[0]! <= now - 60_000) window.shift();
  };
  return {
    take(now) {
      expire(now);
      if (window.length >= rpm) return false;
      window.push(now);
      return true;
    },
    remaining(now) {
      expire(now);
      return Math.max(0, rpm - window.length);
    },
    retryAfterS(now) {
      expire(now);
      return Math.max(1, Math.ceil((window[0]! + 60_000 - now) / 1000));
    },
    headers(now) {
      expire(now);
      const empty = window.length === 0 ? 0 : window[window.length - 1]! + 60_000 - now;
      return {
        'x-ratelimit-limit-requests': String(rpm),
        'x-ratelimit-remaining-requests': String(Math.max(0, rpm - window.length)),
        'x-ratelimit-reset-requests': `${(empty / 1000).toFixed(3)}s`,
      };
    },
  };
}

export async function startRateLimitedProvider(opts: RateLimitedOptions): Promise<RateLimitedProvider> {
  const limit = opts.algorithm === 'token-bucket' ? tokenBucket(opts.rpm) : slidingWindow(opts.rpm);
  const dialect: WireDialect = opts.algorithm === 'token-bucket' ? anthropicDialect : openAiChatDialect;
  const usage = opts.usage ?? { input: 400, output: 20 };
  const frameDelayMs = opts.frameDelayMs ?? 20;
  const stats: RateLimitedStats = {
    requests: 0,
    limited: 0,
    accepted: [],
    acceptedTags: [],
    refused: [],
    othersAccepted: 0,
    answeringMs: 0,
  };
  const startedAt = Date.now();
  let inFlight = 0;
  // The other application's requests, evenly spaced, played up to `now` before each of ours.
  let nextOther = startedAt;
  const playOthers = (now: number) => {
    if (!opts.others) return;
    const until = startedAt + (opts.others.untilMs ?? Infinity);
    for (; nextOther <= Math.min(now, until); nextOther += 60_000 / opts.others.rpm)
      if (limit.take(nextOther)) stats.othersAccepted++;
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (!dialect.matches(req.url ?? '')) {
        res.writeHead(404).end();
        return;
      }
      const now = Date.now();
      playOthers(now);
      stats.requests++;
      const busy = opts.concurrency !== undefined && inFlight >= opts.concurrency;
      if (busy || !limit.take(now)) {
        stats.limited++;
        stats.refused.push(now);
        const e = dialect.error(429, 'Rate limit reached for requests. Please try again later.');
        res
          .writeHead(429, {
            ...e.headers,
            ...limit.headers(now),
            'retry-after': String(busy ? 1 : limit.retryAfterS(now)),
          })
          .end(e.body);
        return;
      }
      stats.accepted.push(now);
      stats.acceptedTags.push(opts.tagOf?.(Buffer.concat(chunks).toString('utf8')));
      inFlight++;
      const t0 = performance.now();
      try {
        res.writeHead(200, { 'content-type': dialect.contentType, 'cache-control': 'no-cache', ...limit.headers(now) });
        for (const frame of dialect.frames({ text: ['done', ' here'], usage })) {
          res.write(frame);
          await sleep(frameDelayMs);
        }
        res.end();
      } finally {
        inFlight--;
        stats.answeringMs += performance.now() - t0;
      }
    })().catch((e: unknown) => res.destroy(e instanceof Error ? e : new Error(String(e))));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const anthropic = opts.algorithm === 'token-bucket';
  return {
    baseUrl,
    spec: anthropic ? 'anthropic:claude-test' : 'openai-compatible:gpt-test',
    env: anthropic ? { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: baseUrl } : { INFINITY_BASE_URL: baseUrl },
    stats,
    startedAt,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
