/**
 * Provider limits at the model call (issue 27 §2): before each model request of a slice, a lease on the worker's
 * limiter key from the store every worker shares; after it, the lease ends and the key's tokens are corrected by the
 * usage the provider reported. A slice whose first request finds no capacity, or whose first request the provider
 * answers "rate limited", does not wait inside its activity: it fails with the non-retryable `Throttled` failure
 * (details: a {@link ThrottledSlice}; from 0.13 a local slice answers it as its result), and the thread waits — for its
 * wake or on a workflow timer — and runs the same slice again: no activity slot held, no retry attempt spent, not a
 * failing slice. Later requests of a slice (after an inline tool answer) wait inside it instead, so the rounds already
 * streamed are kept.
 *
 * A thread's first request refused for capacity joins the key's wake-up list (issue 41, capacity-wakeups.ts): its
 * `Throttled` failure says `queued`, and the thread is signalled when a grant is held for it, its timer only a fallback.
 *
 * Model routing (model-routing.ts): when the agent has a next model, a gate asked with `routeAfterMs` (the agent's
 * `closedForMs`) throws {@link KeyClosed} instead — for any round — once the key's wait exceeds it: the wait the key names
 * (a backoff's rest, a window's refill, a 429's `Retry-After`) plus what the round already waited in the slice. A key
 * that is closed for less keeps the behaviour above (the first round's refusal, a later round's wait).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import type { CapacityRequest, CapacityTicket, ProviderLimits, ProviderReport, ThrottledSlice } from '../core/capacity';
import { HELD_PREFIX } from '../core/capacity';
import { SLICE_REFUSED } from '../core/slice-protocol';
import type { TokenUsage } from '../core/types';
import type { ModelRequest } from '../model/provider';
import { reportFromFailure } from '../model/rate-limit-headers';
import type { ConversationStore } from '../store/conversation-store';
import type { CapacityWakeups } from './capacity-wakeups';

/** A lease ends this long after its last renewal if its worker dies. */
export const LEASE_MS = 30_000;
const RENEW_MS = 10_000;
/** Expected output of a request, in tokens, before the provider reports the real figure. */
export const OUTPUT_ESTIMATE_TOKENS = 1_000;
/** A later round waits at most this long between two tries. */
const MAX_IN_SLICE_WAIT_MS = 5_000;

export interface CapacityLease {
  /**
   * Ends the lease; `usage`: what the provider reported (corrects the key's tokens); `rateLimits`: what its rate-limit
   * headers said.
   */
  release(usage?: TokenUsage, rateLimits?: ProviderReport): Promise<void>;
  /** The answer began (its first part): the key's minute counts the request from now if it left late. */
  answered(): void;
  /** What the key's state was at the grant (the store's). */
  readonly ticket?: CapacityTicket;
}

export interface CapacityGate {
  /**
   * Before a model request: a lease, or (`round` 0) the `Throttled` failure; later rounds wait for one. With
   * `routeAfterMs` (a next model exists): {@link KeyClosed} once the key's wait exceeds it.
   */
  acquire(request: ModelRequest, round: number, signal: AbortSignal, routeAfterMs?: number): Promise<CapacityLease>;
  /**
   * The provider answered "rate limited" to the request of `lease` (`failure`: its error, with the answer's headers):
   * every worker waits; `round` 0 fails with `Throttled`, or, with `routeAfterMs` below the wait, any round with
   * {@link KeyClosed}.
   */
  rateLimited(
    waitMs: number,
    round: number,
    lease?: CapacityLease,
    failure?: unknown,
    routeAfterMs?: number,
  ): Promise<void>;
}

/** The key is closed longer than the agent waits for it: the slice's next model serves the round (model-routing.ts). */
export class KeyClosed extends Error {
  override readonly name = 'KeyClosed';
  constructor(
    readonly key: string,
    readonly reason: ThrottledSlice['reason'],
    readonly retryAfterMs: number,
  ) {
    super(`limits key ${key} closed (${reason}) for ${Math.ceil(retryAfterMs / 1000)} s`);
  }
}

/** How a refused thread is woken: its workflow id, and the worker's dispatcher. */
export interface CapacityWaiting {
  waiter: string;
  wakeups: CapacityWakeups;
}

/**
 * The gate of a worker with `limits` on `modelId`, or none without limits. `share`: the thread's fair share of the key
 * (its Temporal fairness key and weight); `waiting`: how the thread is woken (without it, a refused thread comes back
 * on its timer).
 */
export function capacityGate(
  store: ConversationStore,
  limits: ProviderLimits | undefined,
  modelId: string,
  foreground: boolean,
  share: CapacityRequest['share'],
  waiting?: CapacityWaiting,
): CapacityGate | undefined {
  if (!limits) return undefined;
  const key = limits.key ?? modelId;
  return {
    async acquire(request, round, signal, routeAfterMs) {
      const tokens = estimateTokens(request);
      const leaseId = randomUUID();
      let ticket: CapacityTicket | undefined;
      let waited = 0;
      // Only a first round that would not route joins the wake-up list: a later round waits in the slice, and a thread
      // that may move to its next model would leave a grant held for nobody.
      const waiter = round === 0 && routeAfterMs === undefined ? waiting?.waiter : undefined;
      for (;;) {
        const grant = await store.capacity.acquire({
          key,
          limits,
          tokens,
          foreground,
          leaseMs: LEASE_MS,
          leaseId,
          ...(share && { share }),
          ...(waiter !== undefined && { waiter }),
        });
        if (grant.granted) {
          ticket = grant.ticket;
          break;
        }
        // Woken ahead of a free concurrency slot, with a grant held: ready here for the moment a call ends.
        if (grant.holding) {
          if (waiting) await waiting.wakeups.nextFree(key, grant.retryAfterMs, signal);
          else await sleep(grant.retryAfterMs, undefined, { signal });
          signal.throwIfAborted();
          continue;
        }
        if (routeAfterMs !== undefined && waited + grant.retryAfterMs > routeAfterMs)
          throw new KeyClosed(key, grant.reason, waited + grant.retryAfterMs);
        if (grant.fallbackMs !== undefined) {
          waiting?.wakeups.waiting(key, limits);
          throw throttledFailure({ key, reason: grant.reason, retryAfterMs: grant.fallbackMs, queued: true });
        }
        if (round === 0) throw throttledFailure({ key, reason: grant.reason, retryAfterMs: grant.retryAfterMs });
        const pause = Math.min(grant.retryAfterMs, MAX_IN_SLICE_WAIT_MS);
        await sleep(pause, undefined, { signal });
        waited += pause;
      }
      const renew = setInterval(
        () => void store.capacity.renew(key, leaseId, LEASE_MS).catch(() => undefined),
        RENEW_MS,
      );
      renew.unref();
      const grantedAt = performance.now();
      let startedAfterMs: number | undefined;
      return {
        ...(ticket && { ticket }),
        answered() {
          startedAfterMs ??= performance.now() - grantedAt;
        },
        async release(usage, rateLimits) {
          clearInterval(renew);
          const used = usage ? (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) : undefined;
          await store.capacity.release(key, leaseId, limits, used, {
            ...(ticket && { ticket }),
            ...(rateLimits && { report: rateLimits }),
            ...(startedAfterMs !== undefined && { startedAfterMs: Math.round(startedAfterMs) }),
          });
          waiting?.wakeups.freed(key, limits);
        },
      };
    },
    async rateLimited(waitMs, round, lease, failure, routeAfterMs) {
      const report = reportFromFailure(failure);
      await store.capacity.backoff(key, limits, waitMs, {
        ...(lease?.ticket && { ticket: lease.ticket }),
        ...(report && { report }),
      });
      if (routeAfterMs !== undefined && waitMs > routeAfterMs) throw new KeyClosed(key, 'rate_limited', waitMs);
      if (round === 0) throw throttledFailure({ key, reason: 'rate_limited', retryAfterMs: waitMs });
    },
  };
}

/**
 * Ends the grant held for `threadId` on the key of `limits` (the lease a dispatch took for it), if there is one, and
 * lets the next waiter have it: for a woken thread whose slice ends before its first request.
 */
export async function giveBackHeld(
  store: ConversationStore,
  wakeups: CapacityWakeups,
  limits: ProviderLimits,
  modelId: string,
  threadId: string,
): Promise<void> {
  const key = limits.key ?? modelId;
  await store.capacity.release(key, `${HELD_PREFIX}${threadId}`, limits, undefined);
  wakeups.freed(key, limits);
}

/** A request's tokens before the call: ~4 characters a token over what is sent, plus the expected output. */
export function estimateTokens(request: ModelRequest): number {
  const chars = request.system.length + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
  return Math.ceil(chars / 4) + OUTPUT_ESTIMATE_TOKENS;
}

export function throttledFailure(t: ThrottledSlice): ApplicationFailure {
  return ApplicationFailure.create({
    type: SLICE_REFUSED.throttled,
    message: t.queued
      ? `waiting for provider capacity: ${t.key} (${t.reason}), woken when a grant is held for it`
      : `waiting for provider capacity: ${t.key} (${t.reason}), ${Math.ceil(t.retryAfterMs)} ms`,
    nonRetryable: true,
    details: [t],
    // Expected, not a fault: the worker logs it at DEBUG and counts no failed activity for it.
    category: ApplicationFailureCategory.BENIGN,
  });
}
