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

/**
 * A fair share's place on the key: `vt`, its requests divided by its weight (start-time fair queuing's virtual time);
 * `until`, when its slices stop counting as waiting for the key unless one asks again; `w`, its weight.
 */
export interface TenantShare {
  vt: number;
  until: number;
  w: number;
  /** The priority key of its last request (Temporal's: lower goes first). */
  p?: number;
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
  /** Fair shares that asked recently, by fairness key ('' for requests without one). */
  shares?: Record<string, TenantShare>;
  /** The key's virtual time: the share the last granted request started at. A tenant that was not waiting starts here. */
  vtime?: number;
}

/** What one model request asks of a key. */
export interface CapacityRequest {
  key: string;
  limits: ProviderLimits;
  /** The request's token estimate (input plus expected output). */
  tokens: number;
  /** A user-facing slice (by its priority key: a root thread's by default, not a batch root's): it may use the reserve. */
  foreground: boolean;
  /** How long the lease holds if never released (a killed worker gives its share back then). */
  leaseMs: number;
  leaseId: string;
  /**
   * The request's fair share: the thread's Temporal fairness key (by default its root thread's id, so one agent tree is
   * one share), weight and priority key; the shares waiting at one priority get requests in proportion to their weights,
   * as the task queue dispatches (a better priority is not held back by worse ones' shares: it has the reserve).
   * @default '' with weight 1 and priority 3
   */
  share?: { key: string; weight?: number; priority?: number };
}

/** `share`: capacity is free, but shares behind this one in the weighted order are waiting for it. */
export type CapacityRefusal = 'backoff' | 'concurrency' | 'requests' | 'tokens' | 'share';

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
/** A waiting tenant counts as waiting this long past the retry it was given, so it is back before it is forgotten. */
export const SHARE_GRACE_MS = 2_000;
/** A share that has not asked for this long is dropped from the key's state (it starts level when it comes back). */
export const SHARE_FORGET_MS = 60_000;
/** A request's priority key when its thread has none (Temporal's default). */
const DEFAULT_SHARE_PRIORITY = 3;
/** At most this many shares are kept per key (the least recently waiting go first): the state stays small. */
export const MAX_SHARES = 512;
/** A tenant refused for its share comes back after at most this many request intervals. */
const MAX_SHARE_WAIT_STEPS = 20;

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
 * debited when granted, and the request's tenant marked as waiting when refused). A request larger than a whole
 * minute's tokens goes once the bucket is full, else it could never go. Capacity that is free goes to the tenant
 * furthest behind its weighted share among those waiting (user-facing slices excepted: they go first).
 */
export function decideCapacity(
  state: CapacityState | undefined,
  req: CapacityRequest,
  activeLeases: number,
  now: number,
): { state: CapacityState; grant: CapacityGrant } {
  const { limits } = req;
  const s = withShares(refill(state ?? freshCapacity(limits, now), limits, now), now);
  const tenant = req.share?.key ?? '';
  const weight = req.share?.weight ?? 1;
  const priority = req.share?.priority ?? DEFAULT_SHARE_PRIORITY;
  const mine = { ...levelShare(s, tenant, now), w: weight, p: priority };
  const refuse = (reason: CapacityRefusal, retryAfterMs: number) => {
    const wait = Math.max(1, Math.ceil(retryAfterMs));
    const shares = { ...s.shares, [tenant]: { ...mine, until: Math.max(mine.until, now + wait + SHARE_GRACE_MS) } };
    return { state: { ...s, shares }, grant: { granted: false as const, reason, retryAfterMs: wait } };
  };
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
  const ahead = aheadOfShare(s.shares, tenant, mine, limits, now);
  if (ahead !== undefined) return refuse('share', ahead);
  return {
    state: {
      ...s,
      requests: limits.rpm === undefined ? s.requests : s.requests - 1,
      tokens: limits.tpm === undefined ? s.tokens : s.tokens - req.tokens,
      shares: { ...s.shares, [tenant]: { ...mine, vt: mine.vt + 1 / weight, until: Math.max(mine.until, now) } },
      vtime: Math.max(s.vtime ?? 0, mine.vt),
    },
    grant: { granted: true },
  };
}

/** The state without shares that have not asked for {@link SHARE_FORGET_MS}, and at most {@link MAX_SHARES} of them. */
function withShares(s: CapacityState, now: number): CapacityState {
  if (!s.shares) return s;
  const recent = Object.entries(s.shares).filter(([, share]) => share.until > now - SHARE_FORGET_MS);
  if (recent.length >= MAX_SHARES) recent.sort(([, a], [, b]) => b.until - a.until).splice(MAX_SHARES - 1);
  return { ...s, shares: Object.fromEntries(recent) };
}

/** Tenants whose slices wait for the key now. */
const waiting = (shares: Record<string, TenantShare> | undefined, now: number) =>
  Object.entries(shares ?? {}).filter(([, share]) => share.until > now);

/**
 * The tenant's share, levelled: a tenant that was not waiting starts no further behind than the key's virtual time
 * (start-time fair queuing), so time it spent idle is not credit to spend later.
 */
function levelShare(s: CapacityState, tenant: string, now: number): TenantShare {
  const own = s.shares?.[tenant] ?? { vt: 0, until: 0, w: 1 };
  return own.until > now ? own : { ...own, vt: Math.max(own.vt, s.vtime ?? 0) };
}

/**
 * How long a tenant should wait for others that are behind it in the weighted share and waiting too, or undefined when
 * it may go (it is at most one of its own requests ahead of every one of them).
 */
function aheadOfShare(
  shares: Record<string, TenantShare> | undefined,
  tenant: string,
  { vt, w: weight, p: priority }: TenantShare,
  limits: ProviderLimits,
  now: number,
): number | undefined {
  const behind = waiting(shares, now).filter(
    ([t, share]) => t !== tenant && (share.p ?? DEFAULT_SHARE_PRIORITY) === priority && share.vt + 1 / weight < vt,
  );
  if (behind.length === 0) return undefined;
  // The others catch up by `gap` in virtual time after about gap × (their weights) requests.
  const gap = vt - Math.min(...behind.map(([, share]) => share.vt));
  const steps = Math.min(MAX_SHARE_WAIT_STEPS, Math.max(1, gap * behind.reduce((w, [, share]) => w + share.w, 0)));
  const interval = limits.rpm !== undefined ? 60_000 / limits.rpm : CONCURRENCY_RETRY_MS;
  return steps * Math.max(interval, CONCURRENCY_RETRY_MS / 5);
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
