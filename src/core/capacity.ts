/**
 * Provider limits shared by a fleet (issue 27 §2): the arithmetic of one limiter key (a provider, a model, an API key),
 * whatever store keeps its state. Requests per minute and tokens per minute are token buckets that refill continuously
 * up to one minute's allowance; concurrency counts unexpired leases. A provider's rate-limit answer closes the key for
 * the time it asked and lowers its rates (`factor`), which recover while the key stays clean. Pure: the stores run
 * {@link decideCapacity} inside a transaction over the key's row and its leases, so every worker reads one state.
 */

/** The limits of one key, as the provider's tier states them. Every field is optional: absent means unlimited. */
export interface ProviderLimits {
  /**
   * The limiter key: workers with the same key share one allowance (one API key's limits, say).
   * @default the worker's model id, e.g. `openai:gpt-4o`
   */
  key?: string;
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per minute (input estimated before the call plus output, corrected from the reported usage after). */
  tpm?: number;
  /** Requests in flight at once, across every worker. */
  concurrency?: number;
  /**
   * Share of each allowance kept for user-facing slices (a root thread's): background slices (children, events,
   * compaction) are refused once less than this share is left, so a person's turn is not stuck behind a fleet's.
   * @default 0.1
   */
  reserve?: number;
}

/** The state of one key, as a store keeps it. */
export interface CapacityState {
  /** Tokens left in the bucket (may be negative: a correction after a call that used more than estimated). */
  tokens: number;
  /** Requests left in the bucket. */
  requests: number;
  /** When the buckets were last refilled (ms since the epoch). */
  refilledAt: number;
  /** The provider asked the fleet to wait until then. */
  backoffUntil: number;
  /** Multiplier of the rates after rate-limit answers, 0.1 to 1. */
  factor: number;
}

/** What one model request asks of a key. */
export interface CapacityRequest {
  key: string;
  limits: ProviderLimits;
  /** The request's token estimate (input plus expected output). */
  tokens: number;
  /** A user-facing slice (a root thread's): it may use the reserve. */
  foreground: boolean;
  /** How long the lease holds if never released (a killed worker gives its share back then). */
  leaseMs: number;
  leaseId: string;
}

export type CapacityRefusal = 'backoff' | 'concurrency' | 'requests' | 'tokens';

/** Why a slice waits for capacity, and how long the limiter asked it to (a 429's `Retry-After`: `rate_limited`). */
export interface ThrottledSlice {
  key: string;
  reason: CapacityRefusal | 'rate_limited';
  retryAfterMs: number;
}

export type CapacityGrant = { granted: true } | { granted: false; reason: CapacityRefusal; retryAfterMs: number };

/** How long a refused request waits when only a lease's end can free capacity. */
export const CONCURRENCY_RETRY_MS = 500;
/** Rates after a rate-limit answer: × this factor, down to {@link MIN_FACTOR}. */
export const BACKOFF_FACTOR = 0.7;
export const MIN_FACTOR = 0.1;
/** A clean minute multiplies the factor by this, up to 1. */
export const RECOVERY_PER_MINUTE = 1.05;

const DEFAULT_RESERVE = 0.1;

/** A key nobody has used yet: full buckets. */
export function freshCapacity(limits: ProviderLimits, now: number): CapacityState {
  return { tokens: limits.tpm ?? 0, requests: limits.rpm ?? 0, refilledAt: now, backoffUntil: 0, factor: 1 };
}

/** The buckets refilled up to `now`, and the factor recovered for the clean time since the last backoff. */
export function refill(s: CapacityState, limits: ProviderLimits, now: number): CapacityState {
  const elapsed = Math.max(0, now - s.refilledAt);
  const clean = now > s.backoffUntil ? Math.max(0, now - Math.max(s.backoffUntil, s.refilledAt)) : 0;
  const factor = Math.min(1, s.factor * RECOVERY_PER_MINUTE ** (clean / 60_000));
  const cap = (perMinute: number | undefined, left: number) =>
    perMinute === undefined ? 0 : Math.min(perMinute * factor, left + (elapsed * perMinute * factor) / 60_000);
  return {
    ...s,
    tokens: cap(limits.tpm, s.tokens),
    requests: cap(limits.rpm, s.requests),
    refilledAt: Math.max(now, s.refilledAt),
    factor,
  };
}

/**
 * Whether a request may go now, given the key's state and its unexpired leases; the new state either way (refilled,
 * and debited when granted). A request larger than a whole minute's tokens goes once the bucket is full, else it could
 * never go.
 */
export function decideCapacity(
  state: CapacityState | undefined,
  req: CapacityRequest,
  activeLeases: number,
  now: number,
): { state: CapacityState; grant: CapacityGrant } {
  const { limits } = req;
  const s = refill(state ?? freshCapacity(limits, now), limits, now);
  const refuse = (reason: CapacityRefusal, retryAfterMs: number) => ({
    state: s,
    grant: { granted: false as const, reason, retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)) },
  });
  if (now < s.backoffUntil) return refuse('backoff', s.backoffUntil - now);
  // Background work leaves the reserve to user-facing slices.
  const keep = req.foreground ? 0 : Math.min(1, Math.max(0, limits.reserve ?? DEFAULT_RESERVE));
  if (limits.concurrency !== undefined) {
    const usable = req.foreground ? limits.concurrency : Math.max(1, Math.floor(limits.concurrency * (1 - keep)));
    if (activeLeases >= usable) return refuse('concurrency', CONCURRENCY_RETRY_MS);
  }
  if (limits.rpm !== undefined) {
    const rate = (limits.rpm * s.factor) / 60_000;
    const need = 1 + keep * limits.rpm * s.factor;
    if (s.requests < need) return refuse('requests', (need - s.requests) / rate);
  }
  if (limits.tpm !== undefined) {
    const full = limits.tpm * s.factor;
    const rate = full / 60_000;
    const need = Math.min(req.tokens, full) + keep * full;
    if (s.tokens < need) return refuse('tokens', (need - s.tokens) / rate);
  }
  return {
    state: {
      ...s,
      requests: limits.rpm === undefined ? s.requests : s.requests - 1,
      tokens: limits.tpm === undefined ? s.tokens : s.tokens - req.tokens,
    },
    grant: { granted: true },
  };
}

/** After the call: the bucket pays for what the call used beyond its estimate (or gets back what it did not use). */
export function correctCapacity(
  s: CapacityState,
  limits: ProviderLimits,
  estimated: number,
  used: number,
): CapacityState {
  if (limits.tpm === undefined) return s;
  return { ...s, tokens: Math.min(limits.tpm * s.factor, s.tokens + estimated - used) };
}

/** The provider answered "rate limited, retry after `waitMs`": the whole key waits, and its rates go down. */
export function backoffCapacity(s: CapacityState, waitMs: number, now: number): CapacityState {
  return {
    ...s,
    backoffUntil: Math.max(s.backoffUntil, now + Math.max(0, waitMs)),
    // One answer lowers the rates once: answers that arrive while the key already waits are the same storm.
    factor: now < s.backoffUntil ? s.factor : Math.max(MIN_FACTOR, s.factor * BACKOFF_FACTOR),
  };
}

/** After a call: the key's state refilled to `now` and corrected (unchanged without a state or a reported usage). */
export function releasedCapacity(
  s: CapacityState | undefined,
  limits: ProviderLimits,
  estimated: number,
  used: number | undefined,
  now: number,
): CapacityState | undefined {
  return s && used !== undefined ? correctCapacity(refill(s, limits, now), limits, estimated, used) : s;
}

/** A rate-limit answer: the key's state (fresh if it had none) refilled to `now`, then closed for `waitMs`. */
export function backedOffCapacity(
  s: CapacityState | undefined,
  limits: ProviderLimits,
  waitMs: number,
  now: number,
): CapacityState {
  return backoffCapacity(refill(s ?? freshCapacity(limits, now), limits, now), waitMs, now);
}

/** The limits a worker was given, checked: positive finite numbers, a reserve within 0..1. */
export function limitsProblem(limits: unknown): string | undefined {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) return 'limits must be an object';
  const l = limits as Record<string, unknown>;
  for (const k of Object.keys(l))
    if (!['key', 'rpm', 'tpm', 'concurrency', 'reserve'].includes(k)) return `limits.${k} is not a limit`;
  if (l.key !== undefined && (typeof l.key !== 'string' || l.key.length === 0 || l.key.length > 200))
    return 'limits.key must be a non-empty string of at most 200 characters';
  for (const k of ['rpm', 'tpm', 'concurrency'] as const) {
    const v = l[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0))
      return `limits.${k} must be a positive number`;
  }
  if (l.concurrency !== undefined && !Number.isInteger(l.concurrency)) return 'limits.concurrency must be an integer';
  if (l.reserve !== undefined && (typeof l.reserve !== 'number' || !(l.reserve >= 0 && l.reserve < 1)))
    return 'limits.reserve must be a number from 0 to below 1';
  return undefined;
}
