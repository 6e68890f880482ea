/**
 * The limiter's arithmetic (core/capacity.ts): buckets refill continuously, concurrency counts leases, a rate-limit
 * answer closes the key and lowers its rates, background work leaves the reserve to user-facing slices.
 */
import { describe, expect, it } from 'vitest';
import {
  BACKOFF_FACTOR,
  backoffCapacity,
  type CapacityRequest,
  type CapacityState,
  correctCapacity,
  decideCapacity,
  limitsProblem,
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
  it('grants a minute of requests at once, then asks to wait for the next to refill', () => {
    const { n, grant, state } = grantsUntilRefused({ rpm: 60, reserve: 0 });
    expect(n).toBe(60);
    expect(grant).toEqual({ granted: false, reason: 'requests', retryAfterMs: 1000 });
    expect(decideCapacity(state, req({ rpm: 60, reserve: 0 }), 0, T0 + 999).grant.granted).toBe(false);
    expect(decideCapacity(state, req({ rpm: 60, reserve: 0 }), 0, T0 + 1000).grant.granted).toBe(true);
  });
});

describe('tokens per minute', () => {
  it('debits the estimate, and the correction after the call pays for the difference', () => {
    const limits = { tpm: 1000, reserve: 0 };
    const first = decideCapacity(undefined, req(limits, 600), 0, T0);
    expect(first.grant.granted).toBe(true);
    expect(first.state.tokens).toBe(400);
    // The call used 900, not 600: 300 more are owed.
    const corrected = correctCapacity(first.state, limits, 600, 900);
    expect(corrected.tokens).toBe(100);
    const refused = decideCapacity(corrected, req(limits, 600), 0, T0);
    expect(refused.grant).toEqual({ granted: false, reason: 'tokens', retryAfterMs: 30_000 });
    // A call that used less gives the rest back, up to the bucket's size.
    expect(correctCapacity(first.state, limits, 600, 0).tokens).toBe(1000);
  });

  it('lets a request larger than a minute of tokens go once the bucket is full', () => {
    const limits = { tpm: 1000, reserve: 0 };
    const d = decideCapacity(undefined, req(limits, 5000), 0, T0);
    expect(d.grant.granted).toBe(true);
    expect(d.state.tokens).toBe(-4000);
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
    const limits = { rpm: 100, concurrency: 10, reserve: 0.2 };
    expect(grantsUntilRefused(limits, 1, false).n).toBe(80);
    expect(grantsUntilRefused(limits, 1, true).n).toBe(100);
    expect(decideCapacity(undefined, req(limits, 1, false), 8, T0).grant).toMatchObject({ reason: 'concurrency' });
    expect(decideCapacity(undefined, req(limits, 1, true), 8, T0).grant.granted).toBe(true);
  });
});

describe("a provider's rate-limit answer", () => {
  it('closes the key for the time asked and lowers its rates, once per storm', () => {
    const limits = { rpm: 100, reserve: 0 };
    const fresh = decideCapacity(undefined, req(limits), 0, T0).state;
    const closed = backoffCapacity(fresh, 2000, T0);
    expect(closed.factor).toBeCloseTo(BACKOFF_FACTOR);
    expect(decideCapacity(closed, req(limits), 0, T0 + 1500).grant).toEqual({
      granted: false,
      reason: 'backoff',
      retryAfterMs: 500,
    });
    // A second answer while the key waits is the same storm: the rates go down once.
    expect(backoffCapacity(closed, 2000, T0 + 100).factor).toBeCloseTo(BACKOFF_FACTOR);
    expect(decideCapacity(closed, req(limits), 0, T0 + 2000).grant.granted).toBe(true);
  });

  it('recovers the rates while the key stays clean', () => {
    const limits = { rpm: 100, reserve: 0 };
    const closed = backoffCapacity(decideCapacity(undefined, req(limits), 0, T0).state, 1000, T0);
    const later = decideCapacity(closed, req(limits), 0, T0 + 1000 + 30 * 60_000).state;
    expect(later.factor).toBe(1);
    const soon = decideCapacity(closed, req(limits), 0, T0 + 1000 + 60_000).state;
    expect(soon.factor).toBeGreaterThan(BACKOFF_FACTOR);
    expect(soon.factor).toBeLessThan(1);
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
