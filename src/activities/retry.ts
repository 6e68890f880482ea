/**
 * Retries of a model round (docs/semantics.md §17): the policy, the timeouts, and which failures are retried after how
 * long. Kept apart from the completion loop so the table reads in one place.
 */
import { ModelStreamEndedError } from '../model/provider';

/** Retry and timeout settings of a completion; defaults follow the reference runtime. */
export interface CompletionPolicy {
  /** Attempts allowed after a failure before giving up. @default 10 */
  maxRetries: number;
  /** No first part within this time: the request is retried. @default 60000 (60 s) */
  initiateTimeoutMs: number;
  /** No part for this long mid-stream: the attempt is discarded and retried. @default 120000 (120 s) */
  chunkTimeoutMs: number;
  /** Wait after a rate-limit error. @default 30000 (30 s) */
  rateLimitWaitMs: number;
  /** Wait after a transient provider error. @default 5000 (5 s) */
  transientWaitMs: number;
  /** Wait after a stream that ended early. @default 1000 (1 s) */
  unexpectedEndWaitMs: number;
  /** Model rounds one slice may run through sync loop-backs before it stops. @default 25 */
  maxRounds: number;
}

export const DEFAULT_COMPLETION_POLICY: CompletionPolicy = {
  maxRetries: 10,
  initiateTimeoutMs: 60_000,
  chunkTimeoutMs: 120_000,
  rateLimitWaitMs: 30_000,
  transientWaitMs: 5_000,
  unexpectedEndWaitMs: 1_000,
  maxRounds: 25,
};

export class StreamTimeout extends Error {}

const RATE_LIMIT = ['please wait before trying again', 'please try again'];
const TRANSIENT = [
  'unexpected end of stream',
  'unexpected error when processing the request',
  'is unable to process your request',
  // Anthropic's `overloaded_error` as an error event of a stream that sent nothing yet (as HTTP, it is a 529).
  'overloaded',
];
const TRANSIENT_CHUNK = ['unexpected end of stream', 'unexpected error when processing the request', 'overloaded'];

/** The HTTP status of a provider's error (the AI SDK's `APICallError.statusCode`), if any. */
export function statusOf(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const includesAny = (msg: string, needles: string[]) => needles.some((n) => msg.toLowerCase().includes(n));

/**
 * A watchdog for one streaming attempt: `next(p)` races `p` against the abort signal and a timeout that restarts at
 * every call. One timer and one listener per attempt, not per chunk: a completion streams hundreds of parts.
 */
export class StreamWatchdog {
  private timer: NodeJS.Timeout | undefined;
  private ms: number;
  private readonly tripped: Promise<never>;
  private fail!: (e: unknown) => void;
  private readonly onAbort = () => this.fail(this.signal.reason);

  constructor(
    private readonly signal: AbortSignal,
    firstMs: number,
  ) {
    this.ms = firstMs;
    this.tripped = new Promise<never>((_, reject) => (this.fail = reject));
    this.tripped.catch(() => undefined); // observed through next()
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Waits for `p`, at most the current timeout; later calls may use another timeout (the chunk timeout). */
  next<T>(p: Promise<T>, ms: number): Promise<T> {
    if (this.timer === undefined || ms !== this.ms) {
      clearTimeout(this.timer);
      this.ms = ms;
      this.timer = setTimeout(() => this.fail(new StreamTimeout()), ms);
    } else {
      this.timer.refresh();
    }
    return Promise.race([p, this.tripped]);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
  }
}

export interface RetryDecision {
  /** False: give up at once with `giveUpError`. */
  retry: boolean;
  info: string;
  waitMs: number;
  giveUpError: string;
}

/** `Retry-After` in seconds or as an HTTP date, capped; undefined when absent or unreadable. */
function retryAfterMs(e: unknown): number | undefined {
  const headers = (e as { responseHeaders?: Record<string, string> } | null)?.responseHeaders;
  const raw = headers?.['retry-after'] ?? headers?.['Retry-After'];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(raw) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : undefined;
}

const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** A provider's "rate limited" answer (HTTP 429, or the original runtime's texts for it). */
export function isRateLimit(failure: unknown): boolean {
  return statusOf(failure) === 429 || includesAny(messageOf(failure), RATE_LIMIT);
}

/**
 * The reference's retry table (docs/semantics.md §17), plus HTTP status codes and `Retry-After` where the provider
 * gives them.
 */
export function classifyFailure(failure: unknown, received: boolean, policy: CompletionPolicy): RetryDecision {
  const unexpectedEnd = {
    retry: true,
    info: 'Stream error (unexpected end), retrying...',
    waitMs: policy.unexpectedEndWaitMs,
  };
  if (failure === undefined || failure instanceof ModelStreamEndedError)
    return { ...unexpectedEnd, giveUpError: 'Stream timed out' };
  if (failure instanceof StreamTimeout) {
    return received
      ? { retry: true, info: 'Stream error (timeout), retrying...', waitMs: 0, giveUpError: 'Stream timed out' }
      : {
          retry: true,
          info: 'Stream error (timeout initiating request), retrying...',
          waitMs: 0,
          giveUpError: 'Timed out initiating request',
        };
  }
  const msg = messageOf(failure);
  const status = statusOf(failure);
  if (received) {
    return includesAny(msg, TRANSIENT_CHUNK)
      ? { ...unexpectedEnd, giveUpError: msg }
      : { retry: false, info: '', waitMs: 0, giveUpError: msg };
  }
  if (isRateLimit(failure)) {
    const waitMs = retryAfterMs(failure) ?? policy.rateLimitWaitMs;
    return {
      retry: true,
      info: `Stream error (rate limit), retrying after ${Math.ceil(waitMs / 1000)} seconds...`,
      waitMs,
      giveUpError: msg,
    };
  }
  if ((status !== undefined && (status >= 500 || status === 408)) || includesAny(msg, TRANSIENT)) {
    return {
      retry: true,
      info: `Stream error (${msg}), retrying...`,
      waitMs: retryAfterMs(failure) ?? policy.transientWaitMs,
      giveUpError: msg,
    };
  }
  return { retry: false, info: '', waitMs: 0, giveUpError: msg };
}
