/**
 * The PostgreSQL store's provider limits (issue 27 §2): each key's state and its leases in the database, shared by
 * every worker on it. Each operation is one transaction that first locks the key's row (`SELECT … FOR UPDATE`, the row
 * inserted if missing), so two workers never decide on the same state. Time is the database's clock
 * (`clock_timestamp()`), one clock for the whole fleet.
 */
import type { Pool, PoolClient } from 'pg';
import type { CapacityGrant, CapacityRequest, CapacityState, ProviderAnswer, ProviderLimits } from '../core/capacity';
import { backedOffCapacity, decideCapacity, dispatchCapacity, releasedCapacity } from '../core/capacity';
import type { TableName } from './postgres-schema';
import type { CapacityDispatch, CapacityLedger } from './conversation-store';
import { inTransaction } from './postgres-tx';

/** Migration 4 (appended to `MIGRATIONS`). */
export const capacityMigration = (t: TableName): string => `
    CREATE TABLE ${t('capacity_keys')} (
      key text PRIMARY KEY,
      state text
    );
    CREATE TABLE ${t('capacity_leases')} (
      key text NOT NULL,
      lease_id text NOT NULL,
      expires_at bigint NOT NULL,
      tokens double precision NOT NULL,
      PRIMARY KEY (key, lease_id)
    );`;

export class PostgresCapacity implements CapacityLedger {
  constructor(
    private readonly pool: Pool,
    private readonly t: TableName,
    /** The store's schema migration, awaited before every call (the first may be a worker's first use of the store). */
    private readonly ready: () => Promise<unknown>,
  ) {}

  /** `fn` in a transaction, once the schema is up to date. */
  private async tx<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    await this.ready();
    return inTransaction(this.pool, fn);
  }

  /** Locks the key's row (creating it) and reads its state and the database's time in ms. */
  private async lock(c: PoolClient, key: string): Promise<{ state?: CapacityState; now: number }> {
    await c.query(`INSERT INTO ${this.t('capacity_keys')} (key) VALUES ($1) ON CONFLICT (key) DO NOTHING`, [key]);
    const { rows } = await c.query<{ state: string | null; now: string }>(
      `SELECT state, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now
       FROM ${this.t('capacity_keys')} WHERE key = $1 FOR UPDATE`,
      [key],
    );
    const row = rows[0]!;
    return { ...(row.state !== null && { state: JSON.parse(row.state) as CapacityState }), now: Number(row.now) };
  }

  private save(c: PoolClient, key: string, state: CapacityState) {
    return c.query(`UPDATE ${this.t('capacity_keys')} SET state = $2 WHERE key = $1`, [key, JSON.stringify(state)]);
  }

  acquire(req: CapacityRequest): Promise<CapacityGrant> {
    return this.tx(async (c) => {
      const { state: before, now } = await this.lock(c, req.key);
      await c.query(`DELETE FROM ${this.t('capacity_leases')} WHERE key = $1 AND expires_at <= $2`, [req.key, now]);
      const { rows } = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${this.t('capacity_leases')} WHERE key = $1`,
        [req.key],
      );
      const { state, grant } = decideCapacity(before, req, Number(rows[0]!.n), now);
      await this.save(c, req.key, state);
      if (grant.granted)
        await c.query(
          `INSERT INTO ${this.t('capacity_leases')} (key, lease_id, expires_at, tokens) VALUES ($1, $2, $3, $4)
           ON CONFLICT (key, lease_id) DO UPDATE SET expires_at = excluded.expires_at, tokens = excluded.tokens`,
          [req.key, req.leaseId, now + req.leaseMs, req.tokens],
        );
      return grant;
    });
  }

  release(
    key: string,
    leaseId: string,
    limits: ProviderLimits,
    used: number | undefined,
    answer?: ProviderAnswer,
  ): Promise<void> {
    return this.tx(async (c) => {
      const { state, now } = await this.lock(c, key);
      const { rows } = await c.query<{ tokens: number }>(
        `DELETE FROM ${this.t('capacity_leases')} WHERE key = $1 AND lease_id = $2 RETURNING tokens`,
        [key, leaseId],
      );
      const released = releasedCapacity(state, limits, { id: leaseId, tokens: rows[0]?.tokens }, used, now, answer);
      if (released) await this.save(c, key, released);
    });
  }

  async dispatch(key: string, limits: ProviderLimits): Promise<CapacityDispatch> {
    await this.ready();
    // Most calls find nobody waiting: a plain read answers them without locking the key.
    const peek = await this.pool.query<{ state: string | null }>(
      `SELECT state FROM ${this.t('capacity_keys')} WHERE key = $1`,
      [key],
    );
    const seen = peek.rows[0]?.state;
    if (!seen || !(JSON.parse(seen) as CapacityState).waiters?.length) return { woken: [] };
    return this.tx(async (c) => {
      const { state: before, now } = await this.lock(c, key);
      await c.query(`DELETE FROM ${this.t('capacity_leases')} WHERE key = $1 AND expires_at <= $2`, [key, now]);
      const { rows } = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${this.t('capacity_leases')} WHERE key = $1`,
        [key],
      );
      const { state, woken, nextAt } = dispatchCapacity(before, limits, Number(rows[0]!.n), now);
      if (state) await this.save(c, key, state);
      return {
        woken,
        waiting: state?.waiters?.length ?? 0,
        ...(nextAt !== undefined && { againInMs: Math.max(0, nextAt - now) }),
      };
    });
  }

  async renew(key: string, leaseId: string, leaseMs: number): Promise<void> {
    await this.ready();
    await this.pool.query(
      `UPDATE ${this.t('capacity_leases')}
       SET expires_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3 WHERE key = $1 AND lease_id = $2`,
      [key, leaseId, leaseMs],
    );
  }

  backoff(key: string, limits: ProviderLimits, waitMs: number, answer?: ProviderAnswer): Promise<void> {
    return this.tx(async (c) => {
      const { state, now } = await this.lock(c, key);
      await this.save(c, key, backedOffCapacity(state, limits, waitMs, now, answer?.ticket, answer?.report));
    });
  }
}
