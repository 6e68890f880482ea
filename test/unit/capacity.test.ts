/**
 * The limiter's arithmetic (core/capacity.ts): buckets refill continuously, concurrency counts leases, a rate-limit
 * answer closes the key and lowers its rates, background work leaves the reserve to user-facing slices, and tenants
 * waiting for the key share it by weight.
 */
import { describe, expect, it } from 'vitest';
import {
  BACKOFF_FACTOR,
  backoffCapacity,
  effectiveLimits,
  factorAt,
  learnFromReport,
  type CapacityRequest,
  type CapacityState,
  correctCapacity,
  decideCapacity,
  dispatchCapacity,
  CLAIM_POLL_MS,
  HOLD_MS,
  limitsProblem,
  MAX_WAITER_ID_CHARS,
  MAX_WAITERS,
  RELEASE_SETTLE_MS,
  releasedCapacity,
  WAITER_FALLBACK_MIN_MS,
  MAX_SHARES,
  type ProviderLimits,
} from '../../src/core/capacity';

const T0 = 1_000_000;
const req = (limits: ProviderLimits, tokens = 100, foreground = true): CapacityRequest => ({
  key: 'k',
  limits,
  tokens,
  foreground,
  leaseMs: 30_000,
  leaseId: 'l',
});

/** Grants in a row at one instant until the first refusal. */
function grantsUntilRefused(limits: ProviderLimits, tokens = 100, foreground = true) {
  let state: CapacityState | undefined;
  for (let n = 0; n < 10_000; n++) {
    const d = decideCapacity(state, req(limits, tokens, foreground), 0, T0);
    state = d.state;
    if (!d.grant.granted) return { n, grant: d.grant, state };
  }
  throw new Error('never refused');
}

describe('requests per minute', () => {
  it('grants half a minute of requests at once, then paces the rest: never more than the minute in any 60 s', () => {
    const limits = { rpm: 60, reserve: 0 };
    const { n, grant, state } = grantsUntilRefused(limits);
    expect(n).toBe(30);
    expect(grant).toEqual({ granted: false, reason: 'requests', retryAfterMs: 1000 });
    expect(decideCapacity(state, req(limits), 0, T0 + 999).grant.granted).toBe(false);
    expect(decideCapacity(state, req(limits), 0, T0 + 1000).grant.granted).toBe(true);
  });

  it('holds a key asked every 10 ms for five minutes to the sliding minute, at ≥ 0.95 of its rate', () => {
    const limits = { rpm: 120, reserve: 0 };
    const granted: number[] = [];
    let state: CapacityState | undefined;
    for (let now = T0; now < T0 + 300_000; now += 10) {
      const d = decideCapacity(state, req(limits), 0, now);
      state = d.state;
      if (d.grant.granted) granted.push(now);
    }
    // At most 120 in any trailing 60 s (the worst case of a sliding-window provider), so a token bucket never refuses.
    let most = 0;
    for (let i = 0, j = 0; i < granted.length; i++) {
      while (granted[j]! <= granted[i]! - 60_000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(120);
    expect(granted.length / (5 * 120)).toBeGreaterThanOrEqual(0.95);
    // No whole minute at once: the first second got half a minute at most.
    expect(granted.filter((t) => t < T0 + 1000).length).toBeLessThanOrEqual(61);
  });

  it('spaces the retries of background requests refused for rate, a quarter of an interval apart', () => {
    const limits = { rpm: 60, reserve: 0 };
    let state = grantsUntilRefused(limits, 100, false).state;
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const d = decideCapacity(state, req(limits, 100, false), 0, T0);
      state = d.state;
      if (!d.grant.granted) waits.push(d.grant.retryAfterMs);
    }
    expect(waits).toEqual([1250, 1500, 1750, 2000, 2250]);
  });
});

describe('a request that left late', () => {
  it("is counted in the key's minute from when its answer began, not from its grant", () => {
    const limits = { rpm: 60, reserve: 0 };
    const first = decideCapacity(undefined, req(limits), 0, T0);
    const ticket = first.grant.granted ? first.grant.ticket : undefined;
    // Its worker was short of CPU: the answer began 5 s after the grant.
    const moved = releasedCapacity(first.state, limits, { id: 'l', tokens: 100 }, 100, T0 + 6_000, {
      ticket,
      startedAfterMs: 5_000,
    })!;
    expect(moved.win).toEqual([[T0 + 5_000, 1, 100]]);
    // On time (within a bin): it stays where it was granted.
    expect(
      releasedCapacity(first.state, limits, { id: 'l', tokens: 100 }, 100, T0 + 600, { ticket, startedAfterMs: 300 })!
        .win,
    ).toEqual([[T0, 1, 100]]);
  });
});

describe('tokens per minute', () => {
  it('debits the estimate, and the correction after the call pays for the difference', () => {
    const limits = { tpm: 2000, reserve: 0 };
    const first = decideCapacity(undefined, req(limits, 600), 0, T0);
    expect(first.grant.granted).toBe(true);
    expect(first.state.tokens).toBe(400);
    const ticket = first.grant.granted ? first.grant.ticket : undefined;
    // The call used 900, not 600: 300 more are owed, in the bucket and in the minute's log.
    const corrected = correctCapacity(first.state, limits, 600, 900, ticket);
    expect(corrected.tokens).toBe(100);
    expect(corrected.win).toEqual([[T0, 1, 900]]);
    const refused = decideCapacity(corrected, req(limits, 600), 0, T0);
    expect(refused.grant).toEqual({ granted: false, reason: 'tokens', retryAfterMs: 15_000 });
    // A call that used less gives the rest back, up to the bucket's size.
    expect(correctCapacity(first.state, limits, 600, 0, ticket).tokens).toBe(1000);
  });

  it('lets a request larger than a minute of tokens go once the bucket is full and the minute holds none', () => {
    const limits = { tpm: 1000, reserve: 0 };
    const d = decideCapacity(undefined, req(limits, 5000), 0, T0);
    expect(d.grant.granted).toBe(true);
    expect(d.state.tokens).toBe(-4500);
  });
});
describe('concurrency', () => {
  it('counts the unexpired leases it is given', () => {
    const limits = { concurrency: 2, reserve: 0 };
    expect(decideCapacity(undefined, req(limits), 1, T0).grant.granted).toBe(true);
    expect(decideCapacity(undefined, req(limits), 2, T0).grant).toMatchObject({
      granted: false,
      reason: 'concurrency',
    });
  });
});

describe('the reserve', () => {
  it('keeps a share of each allowance for user-facing slices', () => {
    // Half a minute at once (50); background leaves 0.2 × 5 % of the minute (at least one request) to user-facing slices.
    const limits = { rpm: 100, concurrency: 10, reserve: 0.2 };
    expect(grantsUntilRefused(limits, 1, false).n).toBe(49);
    expect(grantsUntilRefused(limits, 1, true).n).toBe(50);
    expect(decideCapacity(undefined, req(limits, 1, false), 8, T0).grant).toMatchObject({ reason: 'concurrency' });
    expect(decideCapacity(undefined, req(limits, 1, true), 8, T0).grant.granted).toBe(true);
  });
});

describe("a provider's rate-limit answer", () => {
  it('closes the key for the time asked and lowers its rates, once per episode', () => {
    const limits = { rpm: 100, reserve: 0 };
    const first = decideCapacity(undefined, req(limits), 0, T0);
    const ticket = first.grant.granted ? first.grant.ticket : undefined;
    expect(ticket).toMatchObject({ at: T0, cuts: 0, requests: 1 });
    const closed = backoffCapacity(first.state, 2000, T0, ticket);
    expect(closed.factor).toBeCloseTo(BACKOFF_FACTOR);
    expect(decideCapacity(closed, req(limits), 0, T0 + 1500).grant).toEqual({
      granted: false,
      reason: 'backoff',
      retryAfterMs: 500,
    });
    // More 429s answering requests granted before the cut are the same episode: the rates go down once, even after
    // the key has reopened.
    expect(backoffCapacity(closed, 2000, T0 + 100, ticket).factor).toBeCloseTo(BACKOFF_FACTOR);
    expect(backoffCapacity(closed, 2000, T0 + 5000, ticket).cuts).toBe(1);
    const after = decideCapacity(closed, req(limits), 0, T0 + 2000);
    expect(after.grant.granted).toBe(true);
    // A 429 answering a request granted after the cut is a new episode.
    const again = after.grant.granted ? after.grant.ticket : undefined;
    expect(backoffCapacity(after.state, 2000, T0 + 2500, again).cuts).toBe(2);
  });

  it('does not cut for a 429 whose headers say requests and tokens were left (a limit on requests in flight)', () => {
    const fresh = decideCapacity(undefined, req({ rpm: 100 }), 0, T0);
    const ticket = fresh.grant.granted ? fresh.grant.ticket : undefined;
    const closed = backoffCapacity(fresh.state, 1000, T0, ticket, { requests: { remaining: 40 } });
    expect(closed.factor).toBe(1);
    expect(closed.backoffUntil).toBe(T0 + 1000);
  });

  it('recovers the rates linearly while the key stays clean, fully within a minute', () => {
    const limits = { rpm: 100, reserve: 0 };
    const closed = backoffCapacity(decideCapacity(undefined, req(limits), 0, T0).state, 1000, T0);
    expect(factorAt(closed, T0 + 1000)).toBeCloseTo(BACKOFF_FACTOR);
    expect(factorAt(closed, T0 + 1000 + 30_000)).toBeCloseTo((1 + BACKOFF_FACTOR) / 2);
    expect(factorAt(closed, T0 + 1000 + 60_000)).toBe(1);
  });
});

describe("the provider's rate-limit headers", () => {
  it("lower the key's minute to the key's own requests plus what the provider said it had left", () => {
    // Configured at 120 a minute; another application uses the same API key: the provider has 20 left after ours.
    const limits = { rpm: 120, reserve: 0 };
    let state: CapacityState | undefined;
    let ticket;
    for (let i = 0; i < 10; i++) {
      const d = decideCapacity(state, req(limits), 0, T0 + i * 500);
      state = d.state;
      if (d.grant.granted) ticket = d.grant.ticket;
    }
    expect(ticket).toMatchObject({ requests: 10 });
    // 10 own + 20 left, less a tenth of the other application's 90 as a margin.
    const told = learnFromReport(state!, { requests: { limit: 120, remaining: 20 } }, ticket, T0 + 5000);
    expect(effectiveLimits(told, limits, T0 + 5000).rpm).toBe(21);
    // The key makes 11 more requests within the minute, not 110.
    let n = 0;
    state = told;
    for (let now = T0 + 5000; now < T0 + 50_000; now += 100) {
      const d = decideCapacity(state, req(limits), 0, now);
      state = d.state;
      if (d.grant.granted) n++;
    }
    expect(n).toBe(11);
    // A report lapses after a minute without answers: the configured limit again.
    expect(effectiveLimits(told, limits, T0 + 5000 + 60_000).rpm).toBe(120);
  });
});

/** A deterministic stream of numbers in [0, 1) (a linear congruential generator). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => (x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
}

/**
 * Background slices of several tenants polling one key of concurrency 1 every 10 ms, each tenant with as many waiting
 * threads as the others (so each poll comes from any tenant with equal chance), each call taking 100 ms: the grants per
 * tenant once `grants` have been made.
 */
function pollers(
  limits: ProviderLimits,
  tenants: string[],
  grants: number,
  from: { state?: CapacityState; now?: number; seed?: number; weights?: Record<string, number> } = {},
) {
  const random = seeded(from.seed ?? 7);
  const counts = Object.fromEntries(tenants.map((t) => [t, 0]));
  let state = from.state;
  let busyUntil = 0;
  let now = from.now ?? T0;
  for (let made = 0; made < grants; now += 10) {
    const tenant = tenants[Math.floor(random() * tenants.length)]!;
    const share = { key: tenant, weight: from.weights?.[tenant] ?? 1 };
    const d = decideCapacity(state, { ...req(limits, 1, false), share }, now < busyUntil ? 1 : 0, now);
    state = d.state;
    if (d.grant.granted) {
      counts[tenant]! += 1;
      made += 1;
      busyUntil = now + 100;
    }
  }
  return { counts, state: state!, now };
}

describe('fair shares', () => {
  it('gives waiting tenants requests in proportion to their weights', () => {
    const limits = { concurrency: 1, reserve: 0 };
    const { counts } = pollers(limits, ['a', 'b'], 400, { weights: { a: 3, b: 1 } });
    expect(counts.a! / 400).toBeGreaterThan(0.72);
    expect(counts.a! / 400).toBeLessThan(0.78);
    // Ten tenants, weights 1 to 10: each within 10 % of its share.
    const ten = Array.from({ length: 10 }, (_, i) => `t${i + 1}`);
    const weights = Object.fromEntries(ten.map((t, i) => [t, i + 1]));
    const many = pollers(limits, ten, 5500, { weights }).counts;
    for (const [i, t] of ten.entries()) {
      const expected = (5500 * (i + 1)) / 55;
      expect(Math.abs(many[t]! - expected) / expected, t).toBeLessThan(0.1);
    }
  });

  it('shares equally without weights, and requests without a share are one share', () => {
    const { counts } = pollers({ concurrency: 1, reserve: 0 }, ['a', ''], 400);
    expect(Math.abs(counts.a! - 200)).toBeLessThanOrEqual(2);
  });

  it('says why a tenant waits, and for how long, when capacity is free but others are behind it', () => {
    const limits = { concurrency: 1, reserve: 0 };
    // b waits (refused while a call ran), then a asks again before b comes back.
    let state = decideCapacity(undefined, { ...req(limits, 1, false), share: { key: 'a' } }, 0, T0).state;
    state = decideCapacity(state, { ...req(limits, 1, false), share: { key: 'b' } }, 1, T0 + 1).state;
    state = decideCapacity(state, { ...req(limits, 1, false), share: { key: 'a' } }, 0, T0 + 2).state;
    const refused = decideCapacity(state, { ...req(limits, 1, false), share: { key: 'a' } }, 0, T0 + 3);
    expect(refused.grant).toMatchObject({ granted: false, reason: 'share' });
    // b goes.
    expect(
      decideCapacity(refused.state, { ...req(limits, 1, false), share: { key: 'b' } }, 0, T0 + 4).grant.granted,
    ).toBe(true);
  });

  it('compares shares within one priority: a better priority is not held back by worse ones', () => {
    const limits = { concurrency: 1, reserve: 0 };
    const at = (key: string, priority: number) => ({ ...req(limits, 1, false), share: { key, priority } });
    // b waits at priority 3 (refused while a call ran); a, at 3 as well, has had one more request than b.
    let state = decideCapacity(undefined, at('a', 3), 0, T0).state;
    state = decideCapacity(state, at('b', 3), 1, T0 + 1).state;
    state = decideCapacity(state, at('a', 3), 0, T0 + 2).state;
    expect(decideCapacity(state, at('a', 3), 0, T0 + 3).grant).toMatchObject({ reason: 'share' });
    // The same share's user-facing request at priority 2 goes.
    expect(decideCapacity(state, at('a', 2), 0, T0 + 3).grant.granted).toBe(true);
  });

  it('does not let a share bank the time it was idle', () => {
    const limits = { concurrency: 1, reserve: 0 };
    // a alone for 300 requests; then b arrives and both wait: b does not get the next 300.
    const alone = pollers(limits, ['a'], 300);
    const { counts } = pollers(limits, ['a', 'b'], 100, { state: alone.state, now: alone.now + 10_000, seed: 3 });
    expect(counts.a).toBeGreaterThan(40);
  });

  it('forgets shares that stopped asking, and keeps at most a bounded number', () => {
    const { state } = pollers({ concurrency: 1, reserve: 0 }, ['a', 'b'], 10);
    const limits = { concurrency: 1, reserve: 0 };
    const later = decideCapacity(state, { ...req(limits, 1, false), share: { key: 'c' } }, 0, T0 + 600_000);
    expect(Object.keys(later.state.shares ?? {})).toEqual(['c']);
    // A thousand agent trees waiting at once (each its own share by default): the key keeps the latest 512.
    let crowd: CapacityState | undefined;
    for (let i = 0; i < 1000; i++)
      crowd = decideCapacity(crowd, { ...req(limits, 1, false), share: { key: `tree-${i}` } }, 1, T0 + i).state;
    expect(Object.keys(crowd!.shares!)).toHaveLength(MAX_SHARES);
    expect(crowd!.shares!['tree-999']).toBeDefined();
    expect(crowd!.shares!['tree-0']).toBeUndefined();
  });
});

/** A background request of thread `id` in tenant `t` that can be woken. */
const waiting = (limits: ProviderLimits, id: string, t = '', weight = 1): CapacityRequest => ({
  ...req(limits, 100, false),
  leaseId: `lease-${id}`,
  waiter: id,
  share: { key: t, weight },
});

/** The state after a burst of grants has used the key's bucket up, at T0. */
const usedUp = (limits: ProviderLimits) => grantsUntilRefused(limits, 100, false).state;

describe('the wake-up list', () => {
  it('queues a refused thread, holds the next freed grant for it, and lets only it claim the hold', () => {
    const limits = { rpm: 60, reserve: 0 };
    const refused = decideCapacity(usedUp(limits), waiting(limits, 'a'), 0, T0);
    expect(refused.grant).toMatchObject({ granted: false, reason: 'requests', retryAfterMs: 1000 });
    const fallbackMs = refused.grant.granted ? 0 : refused.grant.fallbackMs!;
    // Its own timer is a fallback only, well past the wait the key named.
    expect(fallbackMs).toBeGreaterThanOrEqual(WAITER_FALLBACK_MIN_MS);
    expect(refused.state.waiters?.map((w) => w.id)).toEqual(['a']);
    // Nothing is free yet: no wake, and the dispatch says when to look again.
    const early = dispatchCapacity(refused.state, limits, 0, T0 + 10);
    expect(early.woken).toEqual([]);
    expect(early.nextAt).toBe(T0 + 1000);
    const at = dispatchCapacity(early.state, limits, 0, T0 + 1000);
    expect(at.woken).toEqual(['a']);
    expect(at.state?.held?.a?.until).toBe(T0 + 1000 + HOLD_MS);
    expect(at.state?.waiters).toEqual([]);
    expect(at.nextAt).toBeUndefined();
    // Another thread finds the capacity taken; the woken one claims it, and the hold's lease ends.
    expect(decideCapacity(at.state, req(limits, 100, false), 1, T0 + 1001).grant.granted).toBe(false);
    const claim = decideCapacity(at.state, waiting(limits, 'a'), 1, T0 + 1800);
    expect(claim.grant).toMatchObject({ granted: true, ticket: { at: T0 + 1800 } });
    // The log counts it from its claim, when it goes to the provider, not from the wake.
    expect(claim.state.win?.find(([bin]) => bin === T0 + 1500)?.[1]).toBe(1);
    expect(claim.state.win?.find(([bin]) => bin === T0 + 1000)?.[1] ?? 0).toBe(0);
    expect(claim.state.held).toEqual({});
  });

  it("wakes waiting tenants in proportion to their weights, and each tenant's threads in the order they came", () => {
    const limits = { rpm: 60, reserve: 0 };
    let state: CapacityState | undefined = usedUp(limits);
    // 20 threads each in tenants a (weight 1), b (1) and c (2), refused in turn.
    for (let i = 0; i < 20; i++)
      for (const [t, w] of [
        ['a', 1],
        ['b', 1],
        ['c', 2],
      ] as const)
        state = decideCapacity(state, waiting(limits, `${t}${i}`, t, w), 0, T0).state;
    expect(state!.waiters).toHaveLength(60);
    const order: string[] = [];
    let now = T0;
    for (let step = 0; step < 200 && order.length < 40; step++) {
      const d = dispatchCapacity(state, limits, 0, now);
      state = d.state;
      for (const id of d.woken) {
        order.push(id);
        // The woken thread claims its grant at once.
        state = decideCapacity(state, waiting(limits, id, id[0]!, id[0] === 'c' ? 2 : 1), 0, now).state;
      }
      now = d.nextAt ?? now + 1000;
    }
    const first40 = order.slice(0, 40);
    const count = (t: string) => first40.filter((id) => id.startsWith(t)).length;
    expect([count('a'), count('b'), count('c')]).toEqual([10, 10, 20]);
    // Within a tenant, first come first woken.
    const ofA = order.filter((id) => id.startsWith('a')).map((id) => Number(id.slice(1)));
    expect(ofA).toEqual([...ofA].sort((x, y) => x - y));
  });

  it("keeps a thread that comes back on its timer behind its own tenant's earlier threads", () => {
    const limits = { rpm: 60, reserve: 0 };
    let state = decideCapacity(usedUp(limits), waiting(limits, 'old', 't'), 0, T0).state;
    state = decideCapacity(state, waiting(limits, 'new', 't'), 0, T0 + 5).state;
    // Capacity is free a second later; `new` asks first, but `old` came before it: it stays queued.
    const asks = decideCapacity(state, waiting(limits, 'new', 't'), 0, T0 + 1000);
    expect(asks.grant).toMatchObject({ granted: false, reason: 'share' });
    expect(asks.state.waiters?.map((w) => w.id)).toEqual(['old', 'new']);
    expect(dispatchCapacity(asks.state, limits, 0, T0 + 1000).woken).toEqual(['old']);
  });

  it('holds grants for a slot beyond the free ones, so a woken thread is ready when a call ends; holds lapse or are given back', () => {
    const limits = { concurrency: 1, reserve: 0 };
    let state = decideCapacity(undefined, waiting(limits, 'a'), 1, T0).state;
    state = decideCapacity(state, waiting(limits, 'b'), 1, T0).state;
    expect(state.waiters?.map((w) => w.id)).toEqual(['a', 'b']);
    // The one slot is busy: `a` is woken ahead of it (one per slot), `b` waits; only a call's end names a time.
    const woke = dispatchCapacity(state, limits, 1, T0 + 100);
    expect(woke.woken).toEqual(['a']);
    expect(woke.nextAt).toBeUndefined();
    // `a` asks while the call still runs: it keeps its grant and asks again soon, from within its slice.
    const early = decideCapacity(woke.state, waiting(limits, 'a'), 1, T0 + 200);
    expect(early.grant).toEqual({ granted: false, reason: 'concurrency', retryAfterMs: CLAIM_POLL_MS, holding: true });
    // Nobody else takes the slot its grant holds; once the call ended, `a` claims it.
    expect(decideCapacity(early.state, waiting(limits, 'x'), 0, T0 + 250).grant.granted).toBe(false);
    const claim = decideCapacity(early.state, waiting(limits, 'a'), 0, T0 + 300);
    expect(claim.grant.granted).toBe(true);
    expect(claim.state.held).toEqual({});
    // A user-facing request counts only calls running, not grants held.
    expect(decideCapacity(woke.state, req(limits), 0, T0 + 300).grant.granted).toBe(true);
    // Past HOLD_MS the hold is gone: the thread asks like any other.
    const late = decideCapacity(woke.state, waiting(limits, 'a'), 0, T0 + 100 + HOLD_MS);
    expect(late.state.held).toEqual({});
    // A woken thread whose slice ended before its request (over budget, say) gives the hold back: nobody claims it then.
    const given = releasedCapacity(woke.state, limits, { id: 'held:a' }, undefined, T0 + 150)!;
    expect(given.held).toEqual({});
    // A call's end frees its slot RELEASE_SETTLE_MS later (the provider closing the request on its side).
    const ended = releasedCapacity(woke.state, limits, { id: 'other', tokens: 100 }, undefined, T0 + 150)!;
    expect(ended.freedAt).toBe(T0 + 150);
    expect(decideCapacity(ended, req(limits), 0, T0 + 150 + RELEASE_SETTLE_MS - 1).grant.granted).toBe(false);
    expect(decideCapacity(ended, req(limits), 0, T0 + 150 + RELEASE_SETTLE_MS).grant.granted).toBe(true);
    // A 429 between the wake and the claim: the hold is given up, and the thread waits for the key again.
    const closed = backoffCapacity(woke.state!, 2000, T0 + 200);
    const refused = decideCapacity(closed, waiting(limits, 'a'), 0, T0 + 300);
    expect(refused.grant).toMatchObject({ granted: false, reason: 'backoff', retryAfterMs: 1900 });
    expect(refused.state.held).toEqual({});
    expect(refused.state.waiters?.map((w) => w.id)).toEqual(['b', 'a']);
  });

  it('holds at most MAX_WAITERS threads; past it a refused thread comes back on its timer', () => {
    const limits = { concurrency: 1, reserve: 0 };
    let state: CapacityState | undefined;
    for (let i = 0; i < MAX_WAITERS; i++) state = decideCapacity(state, waiting(limits, `w${i}`), 1, T0).state;
    const over = decideCapacity(state, waiting(limits, 'one-more'), 1, T0);
    expect(over.grant).toEqual({ granted: false, reason: 'concurrency', retryAfterMs: 500 });
    expect(over.state.waiters).toHaveLength(MAX_WAITERS);
  });

  it('holds at most MAX_WAITER_ID_CHARS of ids: long thread ids do not swell the key row every decision rewrites', () => {
    const limits = { concurrency: 1, reserve: 0 };
    let state: CapacityState | undefined;
    const long = (i: number) => `${i}-`.padEnd(1_000, 'x');
    const fit = MAX_WAITER_ID_CHARS / 1_000;
    for (let i = 0; i < fit; i++) state = decideCapacity(state, waiting(limits, long(i)), 1, T0).state;
    expect(state!.waiters).toHaveLength(fit);
    const over = decideCapacity(state, waiting(limits, long(fit)), 1, T0);
    expect(over.grant.granted ? undefined : over.grant.fallbackMs).toBeUndefined();
    expect(over.state.waiters).toHaveLength(fit);
    expect(JSON.stringify(over.state).length).toBeLessThan(300 * 1024);
  });

  it('does not queue user-facing requests: they go first, with the reserve', () => {
    const limits = { rpm: 60, reserve: 0 };
    const fg = decideCapacity(usedUp(limits), { ...waiting(limits, 'u'), foreground: true }, 0, T0);
    expect(fg.grant.granted).toBe(false);
    expect(fg.grant.granted ? undefined : fg.grant.fallbackMs).toBeUndefined();
    expect(fg.state.waiters ?? []).toEqual([]);
  });
});

describe('limitsProblem', () => {
  it('accepts limits as documented and names what is wrong otherwise', () => {
    expect(limitsProblem({ key: 'anthropic:team', rpm: 1000, tpm: 80_000, concurrency: 20, reserve: 0.1 })).toBe(
      undefined,
    );
    expect(limitsProblem({ rpm: -1 })).toBe('limits.rpm must be a positive number');
    expect(limitsProblem({ concurrency: 1.5 })).toBe('limits.concurrency must be an integer');
    expect(limitsProblem({ rpn: 10 })).toBe('limits.rpn is not a limit');
    expect(limitsProblem({ reserve: 1 })).toBe('limits.reserve must be a number from 0 to below 1');
    expect(limitsProblem([])).toBe('limits must be an object');
    expect(limitsProblem({ key: '' })).toMatch(/limits.key/);
  });
});
