/**
 * Provider limits shared by a fleet (issue 27 §2, issue 41): the arithmetic of one limiter key (a provider, a model, an
 * API key), whatever store keeps its state. Per key and per allowance (requests, tokens):
 * - a log of the key's grants over the trailing minute, in half-second bins, that holds the key to "at most the
 *   minute's allowance in any trailing {@link WINDOW_SPAN_MS}" — the rule of a sliding-window provider, which a
 *   token-bucket provider (Anthropic's documented algorithm) accepts too;
 * - a small bucket ({@link BURST_SHARE} of the minute, refilled at the minute's rate) that smooths admission: a fleet
 *   woken at once gets half a minute's allowance at once, then the rest paced, never the whole minute in one burst;
 * - the limits the provider reports (rate-limit headers: what it has left for the key, counted with the key's own
 *   grants), which lower the key's allowance below the configured one while another application uses the same API key;
 * - a rate factor, cut once per 429 episode (a 429 answering a request granted before the last cut is the same
 *   episode) and recovering linearly to 1 within {@link RECOVERY_MS} of clean time.
 * Concurrency counts unexpired leases. A refused background request that names its thread (`waiter`) joins the key's
 * wake-up list: {@link dispatchCapacity} — run by any worker when capacity frees (a lease ends, the log or bucket has
 * room again) — takes the waiters in weighted fair order, holds a grant for each (a lease and the log's count, for
 * {@link HOLD_MS}) and names the threads to wake; a woken thread's next request claims its hold. So a waiting thread
 * asks once per grant, not on a timer, and capacity goes to tenants by weight. A refused request without a waiter is
 * told when capacity frees for it, and those refused for rate are spaced apart, so a crowd comes back spread out. Pure:
 * the stores run {@link decideCapacity} inside a transaction over the key's row and its leases, so every worker reads
 * one state.
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
  /** Grants over the trailing window: `[bin start (ms), requests, tokens]`, oldest first. */
  win?: [number, number, number][];
  /** 429 episodes so far: each cut the factor once. */
  cuts?: number;
  /** When the last cut was, and `factor` right after it (the factor recovers from there). */
  cutAt?: number;
  /** The limits the provider last reported room for (rate-limit headers), and when. */
  learned?: { rpm?: number; tpm?: number; at: number };
  /** Requests refused for rate are told to come back from here on, one interval apart (a virtual queue). */
  queueAt?: number;
  /** The wake-up list, oldest first (issue 41). */
  waiters?: CapacityWaiter[];
  /** Grants held for woken threads, by workflow id. */
  held?: Record<string, HeldGrant>;
  /** When a call on the key last ended (with `concurrency`): its slot is free {@link RELEASE_SETTLE_MS} later. */
  freedAt?: number;
}

/** What a grant says about the key at that moment: handed back after the call with the provider's answer. */
export interface CapacityTicket {
  /** The store's clock at the grant. */
  at: number;
  /** The key's 429 episodes then: a 429 answering this request is a new episode only if no cut came since. */
  cuts: number;
  /** The key's own requests and tokens in the provider's trailing minute then, this one's included. */
  requests: number;
  tokens: number;
}

/** One allowance as a provider's rate-limit headers state it. */
export interface ReportedAllowance {
  limit?: number;
  remaining?: number;
  /** Until it is whole again (ms from the answer). */
  resetMs?: number;
}

/** A call's grant and what the provider's answer to it said: handed to the store after the call. */
export interface ProviderAnswer {
  ticket?: CapacityTicket;
  report?: ProviderReport;
  /**
   * How long after its grant the answer began (its first part): the provider had the request by then. A request that
   * left late (its worker short of CPU, say) is counted in the key's minute from then, not from its grant.
   */
  startedAfterMs?: number;
}

/** What a provider's answer said about the key (its rate-limit headers; `retryAfterMs` on a 429). */
export interface ProviderReport {
  requests?: ReportedAllowance;
  tokens?: ReportedAllowance;
  retryAfterMs?: number;
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
  /**
   * The thread asking (its workflow id), when it can be woken (issue 41): a background request refused joins the key's
   * wake-up list, and a request of a thread that capacity is held for claims the hold.
   */
  waiter?: string;
}

/** `share`: capacity is free, but shares behind this one in the weighted order are waiting for it. */
export type CapacityRefusal = 'backoff' | 'concurrency' | 'requests' | 'tokens' | 'share';

/** Why a slice waits for capacity, and how long the limiter asked it to (a 429's `Retry-After`: `rate_limited`). */
export interface ThrottledSlice {
  key: string;
  reason: CapacityRefusal | 'rate_limited';
  retryAfterMs: number;
  /**
   * The thread is on the key's wake-up list (0.13, issue 41): a `capacity` signal wakes it when a grant is held for it;
   * `retryAfterMs` is then its fallback timer.
   */
  queued?: boolean;
}

export type CapacityGrant =
  | { granted: true; ticket?: CapacityTicket }
  | {
      granted: false;
      reason: CapacityRefusal;
      /** How long the key asks the request to wait (its refill, a backoff's rest, a lease's likely end). */
      retryAfterMs: number;
      /**
       * On the key's wake-up list: the thread is woken (signalled) when capacity is held for it, and comes back after
       * this long on its own only if no wake came (twice its estimated wait, within bounds).
       */
      fallbackMs?: number;
      /**
       * A grant is held for this thread, but every concurrency slot is still in use (woken ahead, so it is ready the
       * moment a call ends): ask again after `retryAfterMs`, from within the slice.
       */
      holding?: boolean;
    };

/** A thread on a key's wake-up list. */
export interface CapacityWaiter {
  /** The thread's workflow id. */
  id: string;
  /** Its fair share's key. */
  t: string;
  /** Its request's token estimate. */
  tok: number;
  /** When it joined the list (its place within its share). */
  at: number;
  /** When it is dropped if it never asks again (past its fallback timer). */
  until: number;
}

/** A grant held for a woken thread until its request claims it (it counts toward concurrency meanwhile). */
export interface HeldGrant {
  until: number;
  tok: number;
  ticket: CapacityTicket;
}

/** How long a refused request waits when only a lease's end can free capacity. */
export const CONCURRENCY_RETRY_MS = 500;
/** Rates after a 429 episode: × this factor, down to {@link MIN_FACTOR}. */
export const BACKOFF_FACTOR = 0.7;
export const MIN_FACTOR = 0.1;
/** Clean time (no 429, key open) after which a cut factor is back at 1, linearly. */
export const RECOVERY_MS = 60_000;
/** The provider's window. */
export const WINDOW_MS = 60_000;
/** Grants are counted in bins this wide. */
export const BIN_MS = 500;
/**
 * The key's log counts a grant this long: the provider's minute, a margin for a request's way to the provider (a
 * request granted earlier may arrive later than one granted after it), and a bin's width.
 */
export const WINDOW_SPAN_MS = WINDOW_MS + 1_000;
/** The smoothing bucket holds this share of a minute's allowance. */
export const BURST_SHARE = 0.5;
/** Background slices leave `reserve` × this share of a minute's allowance (at least one request) to user-facing ones. */
export const RESERVE_SCALE = 0.05;
/** Of another application's use of the key (as the headers show it), this share is left to it as a margin. */
export const SHARED_MARGIN = 0.1;
/** Background requests refused for rate come back this share of a request interval apart. */
export const QUEUE_DENSITY = 0.25;
/** Rate-limit headers older than this no longer lower the key's allowance. */
export const REPORT_TTL_MS = 60_000;

const DEFAULT_RESERVE = 0.1;
/** A waiting tenant counts as waiting this long past the retry it was given, so it is back before it is forgotten. */
export const SHARE_GRACE_MS = 2_000;
/** A share granted or refused this recently keeps its place (it is not levelled to the key's virtual time). */
export const SHARE_ACTIVE_MS = 5_000;
/** A share that has not asked for this long is dropped from the key's state (it starts level when it comes back). */
export const SHARE_FORGET_MS = 60_000;
/** A request's priority key when its thread has none (Temporal's default). */
const DEFAULT_SHARE_PRIORITY = 3;
/** At most this many shares are kept per key (the least recently waiting go first): the state stays small. */
export const MAX_SHARES = 512;
/** A tenant refused for its share comes back after at most this many request intervals. */
const MAX_SHARE_WAIT_STEPS = 20;
/** The lease id that gives back a grant held for a woken thread: this, then its workflow id. */
export const HELD_PREFIX = 'held:';
/**
 * A concurrency-bound key holds grants for up to this many woken threads per slot beyond the slots free, so the next
 * threads are loaded and ready when calls end (a wake takes a signal, a workflow task and the slice's load).
 */
export const CONCURRENCY_LOOKAHEAD = 1;
/**
 * A concurrency slot is free this long after the call that held it ended: the client may read a stream's last event
 * before the provider has closed the request on its side, and a request sent in between is refused (a 429 that closes
 * the key for its `retry-after`).
 */
export const RELEASE_SETTLE_MS = 50;
/**
 * A woken thread whose grant waits for a concurrency slot asks again at least this often, within its slice (its
 * worker tells it at once when one of its own calls ends).
 */
export const CLAIM_POLL_MS = 100;
/** A grant held for a woken thread lapses this long after the wake if its request never claims it. */
export const HOLD_MS = 20_000;
/** The wake-up list holds at most this many threads; past it, refused threads come back on their timers. */
export const MAX_WAITERS = 2_000;
/**
 * The ids on the list hold at most this many characters in all (thread ids may be up to 1,000): the key's row, read
 * and written by every decision on it, stays under ~300 KiB.
 */
export const MAX_WAITER_ID_CHARS = 200_000;
/** A queued thread's fallback timer: twice its estimated wait, within these bounds (the wake normally comes first). */
export const WAITER_FALLBACK_MIN_MS = 30_000;
export const WAITER_FALLBACK_MAX_MS = 5 * 60_000;
/** A waiter is dropped this long after its fallback timer, if it never asked again. */
const WAITER_GRACE_MS = 10_000;
/** One dispatch holds grants for at most this many threads (the next dispatch goes on). */
export const MAX_WAKES_PER_DISPATCH = 64;

/** A key nobody has used yet: full buckets, an empty log. */
export function freshCapacity(limits: ProviderLimits, now: number): CapacityState {
  return {
    tokens: (limits.tpm ?? 0) * BURST_SHARE,
    requests: (limits.rpm ?? 0) * BURST_SHARE,
    refilledAt: now,
    backoffUntil: 0,
    factor: 1,
  };
}

/** The rate factor at `now`: the factor after the last cut, recovered linearly over clean time, up to 1. */
export function factorAt(s: CapacityState, now: number): number {
  if (s.factor >= 1) return 1;
  const clean = Math.max(0, now - Math.max(s.cutAt ?? s.refilledAt, s.backoffUntil));
  return Math.min(1, s.factor + ((1 - s.factor) * clean) / RECOVERY_MS);
}

/**
 * The key's allowances per minute at `now`: the configured ones × the rate factor, and no more than the provider last
 * reported room for (within {@link REPORT_TTL_MS}).
 */
export function effectiveLimits(s: CapacityState, limits: ProviderLimits, now: number): { rpm?: number; tpm?: number } {
  const f = factorAt(s, now);
  const fresh = s.learned && now - s.learned.at < REPORT_TTL_MS ? s.learned : undefined;
  const one = (configured: number | undefined, reported: number | undefined) =>
    configured === undefined ? undefined : Math.min(configured * f, reported ?? Infinity);
  return { rpm: one(limits.rpm, fresh?.rpm), tpm: one(limits.tpm, fresh?.tpm) };
}

/** The smoothing buckets refilled up to `now` (at the key's effective rates, up to {@link BURST_SHARE} of a minute). */
export function refill(s: CapacityState, limits: ProviderLimits, now: number): CapacityState {
  const elapsed = Math.max(0, now - s.refilledAt);
  const eff = effectiveLimits(s, limits, now);
  const cap = (perMinute: number | undefined, left: number) =>
    perMinute === undefined ? 0 : Math.min(perMinute * BURST_SHARE, left + (elapsed * perMinute) / 60_000);
  return {
    ...s,
    tokens: cap(eff.tpm, s.tokens),
    requests: cap(eff.rpm, s.requests),
    refilledAt: Math.max(now, s.refilledAt),
  };
}

/** A bin's last moment in the log. */
const binEnd = (bin: number) => bin + BIN_MS + WINDOW_SPAN_MS;
const binOf = (t: number) => Math.floor(t / BIN_MS) * BIN_MS;

/** The log without bins past the span. */
function liveLog(win: CapacityState['win'], now: number): [number, number, number][] {
  return (win ?? []).filter(([bin]) => binEnd(bin) > now);
}

/** The log's requests (`i` 1) or tokens (`i` 2) within the provider's own minute before `now` (bins wholly in it). */
function inProviderMinute(win: [number, number, number][], i: 1 | 2, now: number): number {
  return win.reduce((n, b) => (b[0] >= now - WINDOW_MS ? n + b[i] : n), 0);
}

/**
 * How long until the log has room for `amount` more of allowance `i` under `cap`: 0 when it has now. An amount larger
 * than the cap goes once the log is empty of it.
 */
function logWait(win: [number, number, number][], i: 1 | 2, amount: number, cap: number, now: number): number {
  let used = win.reduce((n, b) => n + b[i], 0);
  if (used + amount <= cap || used <= 0) return 0;
  for (const b of win) {
    used -= b[i];
    if (used + amount <= cap || used <= 0) return Math.max(1, binEnd(b[0]) - now);
  }
  return Math.max(1, binEnd(win[win.length - 1]![0]) - now);
}

/** Requests and tokens background slices leave to user-facing ones, of an allowance of `perMinute`. */
function reserveOf(keep: number, perMinute: number, unit: number): number {
  return keep > 0 ? Math.max(unit, keep * RESERVE_SCALE * perMinute) : 0;
}

/**
 * Whether a request may go now, given the key's state and its unexpired leases; the new state either way (refilled,
 * logged and debited when granted, and the request's tenant marked as waiting when refused). A request larger than
 * the bucket goes once the bucket is full, and one larger than the minute's tokens once the log holds none, else it
 * could never go. Capacity that is free goes to the tenant furthest behind its weighted share among those waiting
 * (user-facing slices excepted: they go first). A thread that a grant is held for claims it (or, woken ahead of a
 * concurrency slot, is told to ask again: `holding`); a background thread refused with a `waiter` joins the wake-up
 * list (`fallbackMs`).
 */
export function decideCapacity(
  state: CapacityState | undefined,
  req: CapacityRequest,
  activeLeases: number,
  now: number,
): { state: CapacityState; grant: CapacityGrant } {
  const { limits } = req;
  const refilled = withShares(refill(state ?? freshCapacity(limits, now), limits, now), now);
  const s = liveWaiting({ ...refilled, win: liveLog(refilled.win, now) }, now);
  const held = req.waiter === undefined ? undefined : s.held?.[req.waiter];
  if (!held) return decideNow(s, req, activeLeases, now);
  // Capacity held for this thread since its wake: it is counted in the buckets already, and in the log at the wake.
  const rest = { ...s, held: without(s.held, req.waiter!) };
  // A 429 closed the key since the wake: the hold is given up, and the thread waits like any other.
  if (now < s.backoffUntil) return decideNow(rest, req, activeLeases, now);
  // Woken ahead of a concurrency slot: it keeps its hold and asks again within its slice, ready when a call ends.
  if (limits.concurrency !== undefined && activeLeases + settling(s, now) >= usableConcurrency(limits, req.foreground))
    return { state: s, grant: { granted: false, reason: 'concurrency', retryAfterMs: CLAIM_POLL_MS, holding: true } };
  // The request goes now, so it moves to now's bin: the provider's minute counts it from its arrival, and a woken
  // thread that took a few seconds to come must not let the key's minute hold more than its allowance at the provider.
  const win = logGrant(logGrant(rest.win!, held.ticket.at, -1, -held.tok), now, 1, held.tok);
  return {
    state: { ...rest, win, waiters: (rest.waiters ?? []).filter((w) => w.id !== req.waiter) },
    grant: {
      granted: true,
      ticket: {
        ...held.ticket,
        at: now,
        requests: inProviderMinute(win, 1, now),
        tokens: inProviderMinute(win, 2, now),
      },
    },
  };
}

/** Concurrency slots a request may use: all for a user-facing one, background ones leave the reserve. */
function usableConcurrency(limits: ProviderLimits, foreground: boolean): number {
  const c = limits.concurrency ?? Infinity;
  if (foreground) return c;
  const keep = Math.min(1, Math.max(0, limits.reserve ?? DEFAULT_RESERVE));
  return Math.max(1, Math.floor(c * (1 - keep)));
}

/** A slot whose call ended within {@link RELEASE_SETTLE_MS}: still counted as busy. */
const settling = (s: CapacityState, now: number) =>
  s.freedAt !== undefined && now - s.freedAt < RELEASE_SETTLE_MS ? 1 : 0;

/** Grants held for woken threads, not claimed yet. */
const heldCount = (s: CapacityState) => Object.keys(s.held ?? {}).length;

function decideNow(
  s: CapacityState,
  req: CapacityRequest,
  activeLeases: number,
  now: number,
): { state: CapacityState; grant: CapacityGrant } {
  const { limits } = req;
  const win = s.win!;
  const tenant = req.share?.key ?? '';
  const weight = req.share?.weight ?? 1;
  const priority = req.share?.priority ?? DEFAULT_SHARE_PRIORITY;
  const mine = { ...levelShare(s, tenant, now), w: weight, p: priority };
  const eff = effectiveLimits(s, limits, now);
  const queueing = req.waiter !== undefined && !req.foreground;
  const refuse = (reason: CapacityRefusal, retryAfterMs: number) => {
    if (queueing) {
      const queued = enqueue(s, req, tenant, mine, retryAfterMs, eff.rpm, now);
      if (queued) {
        const grant = { granted: false as const, reason, retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)) };
        return { state: queued.state, grant: { ...grant, fallbackMs: queued.fallbackMs } };
      }
    }
    let wait = Math.max(1, Math.ceil(retryAfterMs));
    let queueAt = s.queueAt;
    // Background refused for rate: come back after those refused before, one request interval apart (user-facing
    // slices are not queued behind them: they have the reserve).
    const rate = reason === 'requests' || reason === 'tokens' || reason === 'backoff';
    if (rate && !req.foreground && eff.rpm !== undefined) {
      // A quarter of a request interval apart: a few ask for each request that frees (some come back late: the
      // workflow adds up to 25 % jitter; others are not their share's turn), so freed capacity does not sit idle.
      const interval = (QUEUE_DENSITY * 60_000) / Math.max(eff.rpm, 1e-3);
      const at = Math.max(now + wait, s.queueAt ?? 0);
      wait = Math.ceil(at - now);
      queueAt = at + interval;
    }
    const shares = { ...s.shares, [tenant]: { ...mine, until: Math.max(mine.until, now + wait + SHARE_GRACE_MS) } };
    return {
      state: { ...s, shares, ...(queueAt !== undefined && { queueAt }) },
      grant: { granted: false as const, reason, retryAfterMs: wait },
    };
  };
  if (now < s.backoffUntil) return refuse('backoff', s.backoffUntil - now);
  // A thread on the wake-up list does not pass its own share's threads that joined it earlier (they are woken first).
  const listed = s.waiters?.find((w) => w.id === req.waiter);
  if (queueing && (listed || (s.waiters?.length ?? 0) < MAX_WAITERS)) {
    const since = listed?.at ?? now;
    const before = s.waiters?.find((w) => w.t === tenant && w.id !== req.waiter && w.at <= since);
    if (before) return refuse('share', perRequestMs(eff.rpm, limits));
  }
  // Background work leaves the reserve to user-facing slices.
  const keep = req.foreground ? 0 : Math.min(1, Math.max(0, limits.reserve ?? DEFAULT_RESERVE));
  if (limits.concurrency !== undefined) {
    // Grants held for woken threads take slots from background requests; a user-facing one counts only calls running.
    const busy = activeLeases + settling(s, now) + (req.foreground ? 0 : heldCount(s));
    if (busy >= usableConcurrency(limits, req.foreground)) return refuse('concurrency', CONCURRENCY_RETRY_MS);
  }
  if (eff.rpm !== undefined) {
    const reserve = reserveOf(keep, eff.rpm, 1);
    const need = Math.min(1, eff.rpm * BURST_SHARE) + reserve;
    if (s.requests < need) return refuse('requests', ((need - s.requests) * 60_000) / eff.rpm);
    const wait = logWait(win, 1, 1, eff.rpm - reserve, now);
    if (wait > 0) return refuse('requests', wait);
  }
  if (eff.tpm !== undefined) {
    const reserve = reserveOf(keep, eff.tpm, 0);
    const need = Math.min(req.tokens, eff.tpm * BURST_SHARE) + reserve;
    if (s.tokens < need) return refuse('tokens', ((need - s.tokens) * 60_000) / eff.tpm);
    const wait = logWait(win, 2, req.tokens, eff.tpm - reserve, now);
    if (wait > 0) return refuse('tokens', wait);
  }
  const ahead = aheadOfShare(s, tenant, mine, limits, now);
  if (ahead !== undefined) return refuse('share', ahead);
  const logged = logGrant(win, now, 1, req.tokens);
  return {
    state: {
      ...s,
      win: logged,
      requests: limits.rpm === undefined ? s.requests : s.requests - 1,
      tokens: limits.tpm === undefined ? s.tokens : s.tokens - req.tokens,
      shares: { ...s.shares, [tenant]: { ...mine, vt: mine.vt + 1 / weight, until: Math.max(mine.until, now) } },
      vtime: Math.max(s.vtime ?? 0, mine.vt),
      ...(req.waiter !== undefined && s.waiters && { waiters: s.waiters.filter((w) => w.id !== req.waiter) }),
    },
    grant: {
      granted: true,
      ticket: {
        at: now,
        cuts: s.cuts ?? 0,
        requests: inProviderMinute(logged, 1, now),
        tokens: inProviderMinute(logged, 2, now),
      },
    },
  };
}

/** About how long one request of the key takes to free: a request interval, or for concurrency alone a short poll. */
function perRequestMs(rpm: number | undefined, limits: ProviderLimits): number {
  if (rpm !== undefined) return 60_000 / Math.max(rpm, 1e-3);
  return CONCURRENCY_RETRY_MS / Math.max(1, limits.concurrency ?? 1);
}

/**
 * The state with the request's thread on the wake-up list (keeping its place if it was on it), and its fallback
 * timer: twice the estimated wait (its place in the list, or the wait the limiter named if longer). Undefined when
 * the list is full.
 */
function enqueue(
  s: CapacityState,
  req: CapacityRequest,
  tenant: string,
  mine: TenantShare,
  retryAfterMs: number,
  rpm: number | undefined,
  now: number,
): { state: CapacityState; fallbackMs: number } | undefined {
  const list = s.waiters ?? [];
  const i = list.findIndex((w) => w.id === req.waiter);
  if (i < 0 && (list.length >= MAX_WAITERS || idChars(list) + req.waiter!.length > MAX_WAITER_ID_CHARS))
    return undefined;
  const ahead = i < 0 ? list.length : i;
  const estimate = Math.max(retryAfterMs, (ahead + 1) * perRequestMs(rpm, req.limits));
  const fallbackMs = Math.round(Math.min(WAITER_FALLBACK_MAX_MS, Math.max(WAITER_FALLBACK_MIN_MS, 2 * estimate)));
  // The workflow adds up to a quarter of jitter to its timer; the waiter outlives it.
  const waiter: CapacityWaiter = {
    id: req.waiter!,
    t: tenant,
    tok: req.tokens,
    at: i < 0 ? now : list[i]!.at,
    until: now + fallbackMs * 1.25 + WAITER_GRACE_MS,
  };
  const waiters = i < 0 ? [...list, waiter] : list.map((w, j) => (j === i ? waiter : w));
  // Its share is on the key (its weight and priority, for the dispatch); it counts as waiting while it has waiters.
  const shares = { ...s.shares, [tenant]: { ...mine, until: Math.max(mine.until, now) } };
  return { state: { ...s, waiters, shares }, fallbackMs };
}

const idChars = (list: readonly CapacityWaiter[]) => list.reduce((n, w) => n + w.id.length, 0);

/**
 * Capacity freed, or may have (a call ended, time passed): holds grants for the threads on the wake-up list, in
 * weighted fair order (the best priority first, then the share furthest behind, then the oldest), as long as the key
 * has room — for concurrency, {@link CONCURRENCY_LOOKAHEAD} more per slot than are free, so woken threads are ready
 * when calls end — and names them (workflow ids) to wake. `nextAt`: when to dispatch again, while threads still wait
 * for rate (none when only a call's end can free capacity: its release dispatches).
 */
export function dispatchCapacity(
  state: CapacityState | undefined,
  limits: ProviderLimits,
  activeLeases: number,
  now: number,
): { state: CapacityState | undefined; woken: string[]; nextAt?: number } {
  if (!state?.waiters?.length) return { state, woken: [] };
  let s: CapacityState = liveWaiting(state, now);
  const woken: string[] = [];
  let nextAt: number | undefined;
  // Held grants count as slots in use (decideNow), so the lookahead widens the key's concurrency for the dispatch only.
  const ahead =
    limits.concurrency === undefined
      ? limits
      : { ...limits, concurrency: limits.concurrency * (1 + CONCURRENCY_LOOKAHEAD) };
  while (woken.length < MAX_WAKES_PER_DISPATCH) {
    const next = nextWaiter(s, now);
    if (!next) break;
    const { waiter, share } = next;
    // The virtual queue of timer-polling requests (`queueAt`) does not delay a dispatch: it is kept as it was.
    const d = decideCapacity(
      { ...s, queueAt: undefined },
      {
        key: '',
        limits: ahead,
        tokens: waiter.tok,
        foreground: false,
        leaseMs: HOLD_MS,
        leaseId: `${HELD_PREFIX}${waiter.id}`,
        share: { key: waiter.t, weight: share.w, priority: share.p ?? DEFAULT_SHARE_PRIORITY },
      },
      activeLeases,
      now,
    );
    if (!d.grant.granted) {
      if (d.grant.reason !== 'concurrency') nextAt = now + d.grant.retryAfterMs;
      break;
    }
    s = {
      ...d.state,
      ...(s.queueAt !== undefined && { queueAt: s.queueAt }),
      waiters: (d.state.waiters ?? []).filter((w) => w.id !== waiter.id),
      held: { ...d.state.held, [waiter.id]: { until: now + HOLD_MS, tok: waiter.tok, ticket: d.grant.ticket! } },
    };
    woken.push(waiter.id);
  }
  if (woken.length === MAX_WAKES_PER_DISPATCH && s.waiters?.length) nextAt = now;
  return { state: s, woken, ...(nextAt !== undefined && s.waiters?.length && { nextAt }) };
}

/** The waiter to wake next: the best priority, then the share furthest behind, then the oldest. */
function nextWaiter(s: CapacityState, now: number): { waiter: CapacityWaiter; share: TenantShare } | undefined {
  let best: { waiter: CapacityWaiter; share: TenantShare } | undefined;
  for (const w of s.waiters ?? []) {
    const share = levelShare(s, w.t, now);
    if (!best) {
      best = { waiter: w, share };
      continue;
    }
    const p = share.p ?? DEFAULT_SHARE_PRIORITY;
    const bp = best.share.p ?? DEFAULT_SHARE_PRIORITY;
    if (p < bp || (p === bp && (share.vt < best.share.vt || (share.vt === best.share.vt && w.at < best.waiter.at))))
      best = { waiter: w, share };
  }
  return best;
}

/** The state without waiters and holds past their time. */
function liveWaiting(s: CapacityState, now: number): CapacityState {
  if (!s.waiters && !s.held) return s;
  const waiters = s.waiters?.filter((w) => w.until > now);
  const held = s.held && Object.fromEntries(Object.entries(s.held).filter(([, h]) => h.until > now));
  return {
    ...s,
    ...(waiters && { waiters }),
    ...(held && { held }),
  };
}

function without<T>(record: Record<string, T> | undefined, key: string): Record<string, T> {
  const out = { ...record };
  delete out[key];
  return out;
}

/** The log with `requests` and `tokens` more in the bin of `at` (a bin already gone takes nothing). */
function logGrant(win: [number, number, number][], at: number, requests: number, tokens: number) {
  const bin = binOf(at);
  const out = win.map((b): [number, number, number] => [...b]);
  const i = out.findIndex((b) => b[0] === bin);
  if (i >= 0) {
    out[i]![1] = Math.max(0, out[i]![1] + requests);
    out[i]![2] = Math.max(0, out[i]![2] + tokens);
    // A bin emptied by a move (a claim, a late request) is gone.
    if (out[i]![1] === 0 && out[i]![2] === 0) out.splice(i, 1);
  } else if (requests > 0 || tokens > 0) {
    out.push([bin, requests, tokens]);
    out.sort((a, b) => a[0] - b[0]);
  }
  return out;
}

/** The state without shares that have not asked for {@link SHARE_FORGET_MS}, and at most {@link MAX_SHARES} of them. */
function withShares(s: CapacityState, now: number): CapacityState {
  if (!s.shares) return s;
  const queued = queuedShares(s);
  const kept = (t: string, share: TenantShare) => (queued.has(t) ? Infinity : share.until);
  const recent = Object.entries(s.shares).filter(([t, share]) => kept(t, share) > now - SHARE_FORGET_MS);
  if (recent.length >= MAX_SHARES) recent.sort(([ta, a], [tb, b]) => kept(tb, b) - kept(ta, a)).splice(MAX_SHARES - 1);
  return { ...s, shares: Object.fromEntries(recent) };
}

/** Shares with threads on the wake-up list. */
const queuedShares = (s: CapacityState) => new Set((s.waiters ?? []).map((w) => w.t));

/** Tenants whose slices wait for the key now: refused lately, or with threads on the wake-up list. */
function waiting(s: CapacityState, now: number): [string, TenantShare][] {
  const queued = queuedShares(s);
  return Object.entries(s.shares ?? {}).filter(([t, share]) => share.until > now || queued.has(t));
}

/**
 * The tenant's share, levelled: a tenant that was not waiting starts no further behind than the key's virtual time
 * (start-time fair queuing), so time it spent idle is not credit to spend later.
 */
function levelShare(s: CapacityState, tenant: string, now: number): TenantShare {
  const own = s.shares?.[tenant] ?? { vt: 0, until: 0, w: 1 };
  // Granted or refused within the last few seconds counts too: a fleet woken at once, granted from the bucket before
  // anyone waited, is still owed its weight's share of that first burst.
  const active = own.until > now - SHARE_ACTIVE_MS || (s.waiters ?? []).some((w) => w.t === tenant);
  return active ? own : { ...own, vt: Math.max(own.vt, s.vtime ?? 0) };
}

/**
 * How long a tenant should wait for others that are behind it in the weighted share and waiting too, or undefined when
 * it may go (it is at most one of its own requests ahead of every one of them).
 */
function aheadOfShare(
  s: CapacityState,
  tenant: string,
  { vt, w: weight, p: priority }: TenantShare,
  limits: ProviderLimits,
  now: number,
): number | undefined {
  const behind = waiting(s, now).filter(
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
  ticket?: CapacityTicket,
): CapacityState {
  if (limits.tpm === undefined) return s;
  const cap = limits.tpm * factorAt(s, s.refilledAt) * BURST_SHARE;
  return {
    ...s,
    tokens: Math.min(cap, s.tokens + estimated - used),
    // The log holds what was used, in the bin of the grant (so a call that used less does not free tokens early).
    ...(ticket && s.win && { win: logGrant(s.win, ticket.at, 0, used - estimated) }),
  };
}

/**
 * The room a provider reported for the key (its rate-limit headers on an answer to the request of `ticket`): the key's
 * own share of the provider's minute then, plus what the provider said was left. Lower than the configured limit when
 * another application uses the same API key; it lapses after {@link REPORT_TTL_MS} unless answers renew it.
 */
export function learnFromReport(
  s: CapacityState,
  report: ProviderReport | undefined,
  ticket: CapacityTicket | undefined,
  now: number,
): CapacityState {
  if (!report || !ticket) return s;
  // Another application's use of the key goes on between two answers: a tenth of it is left to it as a margin.
  const room = (a: ReportedAllowance | undefined, own: number) => {
    if (a?.remaining === undefined || !Number.isFinite(a.remaining)) return undefined;
    const remaining = Math.max(0, a.remaining);
    const others = a.limit === undefined ? 0 : Math.max(0, a.limit - remaining - own);
    return Math.min(a.limit ?? Infinity, own + remaining - Math.ceil(others * SHARED_MARGIN));
  };
  const rpm = room(report.requests, ticket.requests);
  const tpm = room(report.tokens, ticket.tokens);
  if (rpm === undefined && tpm === undefined) return s;
  const fresh = s.learned && now - s.learned.at < REPORT_TTL_MS ? s.learned : undefined;
  return {
    ...s,
    learned: {
      at: now,
      ...((rpm ?? fresh?.rpm) !== undefined && { rpm: rpm ?? fresh!.rpm! }),
      ...((tpm ?? fresh?.tpm) !== undefined && { tpm: tpm ?? fresh!.tpm! }),
    },
  };
}

/**
 * The provider answered "rate limited, retry after `waitMs`": the whole key waits. The rates go down once per episode:
 * a 429 answering a request granted before the last cut (its `ticket` says) is part of that cut's episode; without a
 * ticket, one that arrives while the key still waits is. A 429 whose headers say the requests and tokens were not used
 * up (a limit on requests in flight, say) closes the key without a cut.
 */
export function backoffCapacity(
  s: CapacityState,
  waitMs: number,
  now: number,
  ticket?: CapacityTicket,
  report?: ProviderReport,
): CapacityState {
  const closed = { ...s, backoffUntil: Math.max(s.backoffUntil, now + Math.max(0, waitMs)) };
  const sameEpisode = ticket ? ticket.cuts < (s.cuts ?? 0) : now < s.backoffUntil;
  const notRate = (report?.requests?.remaining ?? 0) > 0 && (report?.tokens?.remaining ?? 1) > 0;
  if (sameEpisode || notRate) return closed;
  return {
    ...closed,
    factor: Math.max(MIN_FACTOR, factorAt(s, now) * BACKOFF_FACTOR),
    cutAt: now,
    cuts: (s.cuts ?? 0) + 1,
  };
}

/**
 * After a call: the key's state refilled to `now`, corrected and told what the provider reported. `lease`: the ended
 * lease's id and token estimate (none when the store had no such lease: nothing to release, unless it names a hold
 * given back). Undefined when there is nothing to write.
 */
export function releasedCapacity(
  s: CapacityState | undefined,
  limits: ProviderLimits,
  lease: { id: string; tokens?: number },
  used: number | undefined,
  now: number,
  answer: ProviderAnswer = {},
): CapacityState | undefined {
  // A hold given back before its thread claimed it (its slice ended first): gone, so no later request claims it.
  const holder = lease.id.startsWith(HELD_PREFIX) ? lease.id.slice(HELD_PREFIX.length) : undefined;
  if (holder !== undefined) return s?.held?.[holder] ? { ...s, held: without(s.held, holder) } : undefined;
  if (!s || lease.tokens === undefined) return undefined;
  const estimated = lease.tokens;
  const { ticket, report, startedAfterMs } = answer;
  const freed = limits.concurrency === undefined ? s : { ...s, freedAt: now };
  const late = ticket !== undefined && startedAfterMs !== undefined && startedAfterMs > BIN_MS;
  if (used === undefined && !report && !late) return freed;
  const refilled = refill(freed, limits, now);
  const corrected = used === undefined ? refilled : correctCapacity(refilled, limits, estimated, used, ticket);
  // Counted from when the provider had it: the log moves it later (never earlier), so every later decision sees it in
  // each minute the provider does.
  const moved =
    late && corrected.win
      ? {
          ...corrected,
          win: logGrant(
            logGrant(corrected.win, ticket.at, -1, -(used ?? estimated)),
            ticket.at + startedAfterMs,
            1,
            used ?? estimated,
          ),
        }
      : corrected;
  return learnFromReport(moved, report, ticket, now);
}

/** A rate-limit answer: the key's state (fresh if it had none) refilled to `now`, then closed for `waitMs`. */
export function backedOffCapacity(
  s: CapacityState | undefined,
  limits: ProviderLimits,
  waitMs: number,
  now: number,
  ticket?: CapacityTicket,
  report?: ProviderReport,
): CapacityState {
  const refilled = refill(s ?? freshCapacity(limits, now), limits, now);
  // The refused request did not count at the provider.
  const counted = ticket && { ...ticket, requests: Math.max(0, ticket.requests - 1) };
  return learnFromReport(backoffCapacity(refilled, waitMs, now, ticket, report), report, counted, now);
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
