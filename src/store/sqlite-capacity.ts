/**
 * The SQLite store's provider limits (issue 27 §2): each key's state and its leases in the store file, so every
 * worker process on the file shares one allowance. Each operation is one `BEGIN IMMEDIATE` transaction: it holds the
 * file's write lock from its first read, so two processes never decide on the same state.
 */
import type Database from 'better-sqlite3';
import type { CapacityGrant, CapacityRequest, CapacityState, ProviderAnswer, ProviderLimits } from '../core/capacity';
import { backedOffCapacity, decideCapacity, dispatchCapacity, releasedCapacity } from '../core/capacity';
import type { CapacityDispatch, CapacityLedger } from './conversation-store';

/** Migration 7. */
export const CAPACITY_MIGRATION = `CREATE TABLE capacity_keys (
     key TEXT PRIMARY KEY,
     state TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE capacity_leases (
     key TEXT NOT NULL,
     lease_id TEXT NOT NULL,
     expires_at INTEGER NOT NULL,
     tokens REAL NOT NULL,
     PRIMARY KEY (key, lease_id)
   ) WITHOUT ROWID;`;

export class SqliteCapacity implements CapacityLedger {
  // Prepared on first use: a read-only store may sit on a file from before the migration.
  private stmts?: ReturnType<SqliteCapacity['prepare']>;

  constructor(
    private readonly db: Database.Database,
    /** Before a write that takes capacity: the store's check that its file is still the one it opened. */
    private readonly checkFile: () => void = () => undefined,
  ) {}

  private prepare() {
    return {
      state: this.db.prepare<[string], { state: string }>('SELECT state FROM capacity_keys WHERE key = ?'),
      save: this.db.prepare<[string, string]>(
        `INSERT INTO capacity_keys (key, state) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET state = excluded.state`,
      ),
      expire: this.db.prepare<[string, number]>('DELETE FROM capacity_leases WHERE key = ? AND expires_at <= ?'),
      count: this.db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM capacity_leases WHERE key = ?'),
      lease: this.db.prepare<[string, string, number, number]>(
        'INSERT OR REPLACE INTO capacity_leases (key, lease_id, expires_at, tokens) VALUES (?, ?, ?, ?)',
      ),
      end: this.db.prepare<[string, string], { tokens: number }>(
        'DELETE FROM capacity_leases WHERE key = ? AND lease_id = ? RETURNING tokens',
      ),
      renew: this.db.prepare<[number, string, string]>(
        'UPDATE capacity_leases SET expires_at = ? WHERE key = ? AND lease_id = ?',
      ),
    };
  }

  private get s() {
    return (this.stmts ??= this.prepare());
  }

  private read(key: string): CapacityState | undefined {
    const row = this.s.state.get(key);
    return row ? (JSON.parse(row.state) as CapacityState) : undefined;
  }

  async acquire(req: CapacityRequest): Promise<CapacityGrant> {
    this.checkFile();
    return this.db
      .transaction((): CapacityGrant => {
        const now = Date.now();
        this.s.expire.run(req.key, now);
        const active = this.s.count.get(req.key)!.n;
        const { state, grant } = decideCapacity(this.read(req.key), req, active, now);
        this.s.save.run(req.key, JSON.stringify(state));
        if (grant.granted) this.s.lease.run(req.key, req.leaseId, now + req.leaseMs, req.tokens);
        return grant;
      })
      .immediate();
  }

  async release(
    key: string,
    leaseId: string,
    limits: ProviderLimits,
    used: number | undefined,
    answer?: ProviderAnswer,
  ): Promise<void> {
    this.db
      .transaction(() => {
        const lease = this.s.end.get(key, leaseId);
        const s = releasedCapacity(
          this.read(key),
          limits,
          { id: leaseId, tokens: lease?.tokens },
          used,
          Date.now(),
          answer,
        );
        if (s) this.s.save.run(key, JSON.stringify(s));
      })
      .immediate();
  }

  async dispatch(key: string, limits: ProviderLimits): Promise<CapacityDispatch> {
    // Most calls find nobody waiting: a plain read answers them without the file's write lock.
    if (!this.read(key)?.waiters?.length) return { woken: [] };
    return this.db
      .transaction((): CapacityDispatch => {
        const before = this.read(key);
        if (!before?.waiters?.length) return { woken: [] };
        const now = Date.now();
        this.s.expire.run(key, now);
        const active = this.s.count.get(key)!.n;
        const { state, woken, nextAt } = dispatchCapacity(before, limits, active, now);
        if (state) this.s.save.run(key, JSON.stringify(state));
        return {
          woken,
          waiting: state?.waiters?.length ?? 0,
          ...(nextAt !== undefined && { againInMs: Math.max(0, nextAt - now) }),
        };
      })
      .immediate();
  }

  async renew(key: string, leaseId: string, leaseMs: number): Promise<void> {
    this.s.renew.run(Date.now() + leaseMs, key, leaseId);
  }

  async backoff(key: string, limits: ProviderLimits, waitMs: number, answer?: ProviderAnswer): Promise<void> {
    this.db
      .transaction(() => {
        const s = backedOffCapacity(this.read(key), limits, waitMs, Date.now(), answer?.ticket, answer?.report);
        this.s.save.run(key, JSON.stringify(s));
      })
      .immediate();
  }
}
