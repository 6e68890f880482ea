/**
 * The memory store's provider limits (issue 27 §2): one process's view, for tests and single-process systems. The
 * SQLite and PostgreSQL stores keep the same state in tables every worker on them shares.
 */
import {
  backedOffCapacity,
  type CapacityGrant,
  type CapacityRequest,
  type CapacityState,
  decideCapacity,
  dispatchCapacity,
  type ProviderAnswer,
  type ProviderLimits,
  releasedCapacity,
} from '../core/capacity';
import type { CapacityDispatch, CapacityLedger } from './conversation-store';

export class MemoryCapacity implements CapacityLedger {
  private readonly states = new Map<string, CapacityState>();
  /** Key → lease id → its end and token estimate. */
  private readonly leases = new Map<string, Map<string, { expiresAt: number; tokens: number }>>();

  async acquire(req: CapacityRequest, now = Date.now()): Promise<CapacityGrant> {
    const leases = this.live(req.key, now);
    const { state, grant } = decideCapacity(this.states.get(req.key), req, leases.size, now);
    this.states.set(req.key, state);
    if (grant.granted) leases.set(req.leaseId, { expiresAt: now + req.leaseMs, tokens: req.tokens });
    return grant;
  }

  async release(
    key: string,
    leaseId: string,
    limits: ProviderLimits,
    used: number | undefined,
    answer?: ProviderAnswer,
    now = Date.now(),
  ): Promise<void> {
    const lease = this.leases.get(key)?.get(leaseId);
    this.leases.get(key)?.delete(leaseId);
    const s = releasedCapacity(this.states.get(key), limits, { id: leaseId, tokens: lease?.tokens }, used, now, answer);
    if (s) this.states.set(key, s);
  }

  async renew(key: string, leaseId: string, leaseMs: number, now = Date.now()): Promise<void> {
    const lease = this.leases.get(key)?.get(leaseId);
    if (lease) lease.expiresAt = now + leaseMs;
  }

  async backoff(
    key: string,
    limits: ProviderLimits,
    waitMs: number,
    answer?: ProviderAnswer,
    now = Date.now(),
  ): Promise<void> {
    this.states.set(key, backedOffCapacity(this.states.get(key), limits, waitMs, now, answer?.ticket, answer?.report));
  }

  async dispatch(key: string, limits: ProviderLimits, now = Date.now()): Promise<CapacityDispatch> {
    const leases = this.live(key, now);
    const { state, woken, nextAt } = dispatchCapacity(this.states.get(key), limits, leases.size, now);
    if (state) this.states.set(key, state);
    return {
      woken,
      waiting: state?.waiters?.length ?? 0,
      ...(nextAt !== undefined && { againInMs: Math.max(0, nextAt - now) }),
    };
  }

  /** The key's leases, the expired ones removed. */
  private live(key: string, now: number): Map<string, { expiresAt: number; tokens: number }> {
    let leases = this.leases.get(key);
    if (!leases) this.leases.set(key, (leases = new Map()));
    for (const [id, l] of leases) if (l.expiresAt <= now) leases.delete(id);
    return leases;
  }
}
