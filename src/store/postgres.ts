/**
 * The conversation store on PostgreSQL, for workers on several machines sharing one database. Same contract and
 * semantics as the SQLite store: conditional, idempotent, atomic commits; items returned exactly as committed.
 */
import { PostgresCapacity } from './postgres-capacity';
import { PostgresEvals } from './postgres-evals';
import type { EvalRecords } from './eval-records';
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import type { SliceResult } from '../core/slice-protocol';
import type { HistoryItem, StagedRef, StoredItem, ThreadKind } from '../core/types';
import { mergeRanges } from './archived-ranges';
import {
  ArchiveLimitError,
  CommitConflictError,
  MAX_ARCHIVED_RANGES,
  type ArchivedRange,
  type CapacityLedger,
  type CommitRequest,
  type ConversationStore,
  type NewSummary,
  type NewThreadRecord,
  type Summary,
  type ThreadRecord,
} from './conversation-store';
import { ItemPrefixCache } from './item-cache';
import { migrateSchema, SCHEMA_NAME, type TableName, tablesIn } from './postgres-schema';
import { PostgresStagedInputs } from './postgres-staged';
import { PostgresBudgets } from './postgres-budgets';
import type { Budget, BudgetRef, BudgetState, ModelSpend } from '../core/budget';
import { inTransaction } from './postgres-tx';

/** Threads shorter than this are not kept in the item cache (as in the SQLite store). */
const ITEM_CACHE_MIN_ITEMS = 8;

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (node-postgres reads `sslmode` and the like from it too). */
  connectionString: string;
  /**
   * The schema that holds the store's tables; created by the first migration when missing. Stores in different schemas
   * of one database are independent.
   * @default 'public'
   */
  schema?: string;
  /**
   * More node-postgres pool settings: `max` connections, `ssl`, `idleTimeoutMillis`, `connectionTimeoutMillis`...
   * @default node-postgres's own (10 connections)
   */
  pool?: Omit<PoolConfig, 'connectionString'>;
  /**
   * Parsed items of recently used threads kept in memory, bounded by their approximate heap size (0 turns it off); see
   * `SqliteStoreOptions.itemCacheBytes`. Valid with any number of workers on the database: committed items are never
   * changed, only appended after.
   * @default 32 MiB
   */
  itemCacheBytes?: number;
}

interface ThreadRow {
  thread_id: string;
  kind: ThreadKind;
  parent_thread_id: string | null;
  root_thread_id: string;
  spawn_order: number | null;
  spawn_tool_call_id: string | null;
  /** Forks only (`forkBaseMigration`). */
  base_thread_id: string | null;
  base_up_to: number | null;
  /** Rewound threads only (`archivedMigration`). */
  archived: string | null;
  closed: boolean;
}

function toRecord(row: ThreadRow): ThreadRecord {
  const r: ThreadRecord = {
    threadId: row.thread_id,
    kind: row.kind,
    rootThreadId: row.root_thread_id,
    closed: row.closed,
  };
  if (row.parent_thread_id !== null) r.parentThreadId = row.parent_thread_id;
  if (row.spawn_order !== null) r.spawnOrder = row.spawn_order;
  if (row.spawn_tool_call_id !== null) r.spawnToolCallId = row.spawn_tool_call_id;
  if (row.base_thread_id !== null) r.base = { threadId: row.base_thread_id, upTo: row.base_up_to ?? 0 };
  if (row.archived !== null) r.archived = JSON.parse(row.archived) as ArchivedRange[];
  return r;
}

/** Bounds default to "all"; positions are `integer` columns, so bounds are compared as `bigint` (no overflow). */
const ALL = Number.MAX_SAFE_INTEGER;

/**
 * Conversations in PostgreSQL (node-postgres pool): for workers and clients in several processes or machines.
 *
 * The schema is brought up to date on first use — every method awaits the same migration — or explicitly with
 * {@link PostgresConversationStore.migrate}. Migrations run under an advisory lock, so workers starting together
 * against one database do not race. The database needs PostgreSQL 11 or later.
 *
 * Commits are serialized per thread by a transaction-scoped advisory lock on a hash of the thread id, taken before the
 * transaction reads anything: of two workers committing to one thread at once, the second waits, then sees the
 * first's commit — a second commit of the same slice is `'duplicate'`, any other with the same expected length a
 * {@link CommitConflictError}. An advisory lock rather than `SELECT … FOR UPDATE` on the thread's row because a commit
 * does not require a thread record (in no store), and a missing row locks nothing; it also leaves the row free for
 * readers and for `markClosed`.
 */
export class PostgresConversationStore implements ConversationStore {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly t: TableName;
  private readonly cache: ItemPrefixCache;
  private readonly staged: PostgresStagedInputs;
  private readonly ledger: PostgresBudgets;
  /** Provider limits' ledger (issue 27 §2), in the database. */
  readonly capacity: CapacityLedger;
  /** Slices in commit order and outcome scores (issue 29 §1), in the database. */
  readonly evals: EvalRecords;
  private ready?: Promise<number>;
  private ended = false;

  constructor(options: PostgresStoreOptions) {
    this.schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(this.schema))
      throw new Error(`schema '${this.schema}' must be a plain identifier (letters, digits, _)`);
    this.t = tablesIn(this.schema);
    this.pool = new Pool({ ...options.pool, connectionString: options.connectionString });
    // An idle connection the server closes (a restart, a proxy's timeout) is reported here; without a listener the
    // process would crash. The pool drops it, and the next query gets a fresh connection or fails with the cause.
    this.pool.on('error', () => undefined);
    this.cache = new ItemPrefixCache({
      maxBytes: options.itemCacheBytes ?? 32 * 1024 * 1024,
      minItems: ITEM_CACHE_MIN_ITEMS,
    });
    this.staged = new PostgresStagedInputs(this.pool, this.t);
    this.ledger = new PostgresBudgets(this.pool, this.t);
    this.capacity = new PostgresCapacity(this.pool, this.t, () => this.migrate());
    this.evals = new PostgresEvals(this.pool, this.t, () => this.migrate());
  }

  /**
   * Brings the database's schema up to date, once per store: the first call applies the missing migrations (under an
   * advisory lock, so concurrent workers wait for one another), later calls return the same promise. Every other
   * method calls it first, so calling it is optional: do it at start-up to fail early on a wrong URL or missing
   * privileges. A failed attempt (the database unreachable) is retried by the next call.
   * @returns the schema version in place
   */
  migrate(): Promise<number> {
    this.ready ??= migrateSchema(this.pool, this.schema).catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  private async query<R extends object>(text: string, values: unknown[]): Promise<R[]> {
    await this.migrate();
    return (await this.pool.query<R>(text, values)).rows;
  }

  async ensureThread(record: NewThreadRecord): Promise<ThreadRecord> {
    // Read first: every slice calls this, and the insert is a write even when the thread exists.
    const existing = await this.getThread(record.threadId);
    if (existing) return existing;
    await this.pool.query(
      `INSERT INTO ${this.t('threads')} (thread_id, kind, parent_thread_id, root_thread_id, spawn_order, spawn_tool_call_id, base_thread_id, base_up_to)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (thread_id) DO NOTHING`,
      [
        record.threadId,
        record.kind,
        record.parentThreadId ?? null,
        record.rootThreadId ?? record.threadId,
        record.spawnOrder ?? null,
        record.spawnToolCallId ?? null,
        record.base?.threadId ?? null,
        record.base?.upTo ?? null,
      ],
    );
    // A separate statement: it sees the row of whoever won a concurrent insert (each statement has its own snapshot).
    return (await this.getThread(record.threadId))!;
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    const [row] = await this.query<ThreadRow>(
      `SELECT thread_id, kind, parent_thread_id, root_thread_id, spawn_order, spawn_tool_call_id, base_thread_id, base_up_to, archived, closed FROM ${this.t('threads')} WHERE thread_id = $1`,
      [threadId],
    );
    return row && toRecord(row);
  }

  async markClosed(threadId: string): Promise<void> {
    await this.query(`UPDATE ${this.t('threads')} SET closed = true WHERE thread_id = $1`, [threadId]);
  }

  /**
   * Serves the cached prefix from memory and reads the rest. Committed items never change, so a cached prefix stays
   * valid whoever appends after it. The one way to break that is outside this class — the database restored from a
   * backup, rows edited by hand — and against it every load that reaches the database also reads the message id at the
   * last cached position and drops the thread's cache when it is not the cached one. (A load that the cache answers
   * whole does not reach the database: after such an outside change, set `itemCacheBytes: 0` or restart workers.)
   */
  async load(threadId: string, from = 0, to = ALL): Promise<StoredItem[]> {
    const cached = this.cache.get(threadId);
    if (to <= cached.length) return cached.slice(from, to);
    const start = Math.max(from, cached.length);
    const check = cached.length > 0 && from <= cached.length ? cached.length - 1 : start;
    // The checked row comes without its item: it may be a large one, and only its message id is compared.
    const rows = await this.query<{ position: number; message_id: string; item: string | null }>(
      `SELECT position, message_id, CASE WHEN position >= $4::bigint THEN item END AS item FROM ${this.t('items')}
       WHERE thread_id = $1 AND position >= $2::bigint AND position < $3::bigint ORDER BY position`,
      [threadId, check, to, start],
    );
    if (check < start) {
      const first = rows.shift();
      if (first?.position !== check || first.message_id !== cached[check]!.messageId) {
        this.cache.forget(threadId);
        return this.load(threadId, from, to);
      }
    }
    let chars = 0;
    const read = rows.map((r) => {
      chars += r.item!.length;
      return { messageId: r.message_id, item: JSON.parse(r.item!) as HistoryItem };
    });
    this.cache.extend(threadId, start, read, chars);
    return from < start ? [...cached.slice(from), ...read] : read;
  }

  async length(threadId: string): Promise<number> {
    return (await this.query<{ n: number }>(this.lengthSql, [threadId]))[0]!.n;
  }

  // The primary key's last entry: COUNT(*) would visit every row of the thread.
  private get lengthSql(): string {
    return `SELECT COALESCE(MAX(position) + 1, 0) AS n FROM ${this.t('items')} WHERE thread_id = $1`;
  }

  async findSlice(threadId: string, sliceId: string): Promise<SliceResult | undefined> {
    const [row] = await this.query<{ result: string }>(
      `SELECT result FROM ${this.t('slices')} WHERE thread_id = $1 AND slice_id = $2`,
      [threadId, sliceId],
    );
    return row && (JSON.parse(row.result) as SliceResult);
  }

  async commit(req: CommitRequest): Promise<'committed' | 'duplicate'> {
    await this.migrate();
    return inTransaction(this.pool, async (c) => {
      await this.lockThread(c, req.threadId);
      const [state] = (
        await c.query<{ duplicate: boolean; n: number }>(
          `SELECT EXISTS (SELECT 1 FROM ${this.t('slices')} WHERE thread_id = $1 AND slice_id = $2) AS duplicate, (${this.lengthSql}) AS n`,
          [req.threadId, req.sliceId],
        )
      ).rows;
      if (state!.duplicate) return 'duplicate';
      if (state!.n !== req.expectedLength) throw new CommitConflictError(req.threadId, req.expectedLength, state!.n);
      // Under the thread's lock, so two rewinds' ranges are appended in commit order.
      const ranges = req.archive ? await this.archivedRanges(c, req.threadId) : [];
      if (req.archive && ranges.length >= MAX_ARCHIVED_RANGES) throw new ArchiveLimitError(req.threadId);
      if (req.items.length > 0) {
        // One statement for all the items: arrays of their columns, numbered from the thread's length.
        await c.query(
          `INSERT INTO ${this.t('items')} (thread_id, position, message_id, slice_id, call_id, item)
           SELECT $1, $2 + n - 1, m, $3, c, i FROM unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS x(m, c, i, n)`,
          [
            req.threadId,
            state!.n,
            req.sliceId,
            req.items.map((s) => s.messageId),
            req.items.map((s) => (s.item.kind === 'tool_call' ? s.item.id : null)),
            req.items.map((s) => JSON.stringify(s.item)),
          ],
        );
      }
      await c.query(`INSERT INTO ${this.t('slices')} (thread_id, slice_id, result) VALUES ($1, $2, $3)`, [
        req.threadId,
        req.sliceId,
        JSON.stringify(req.result),
      ]);
      if (req.summary) await this.saveSummary(c, req.summary);
      if (req.archive) {
        await c.query(`UPDATE ${this.t('threads')} SET archived = $2 WHERE thread_id = $1`, [
          req.threadId,
          JSON.stringify([...ranges, req.archive]),
        ]);
      }
      if (req.consumedStaged) await this.staged.remove(req.consumedStaged, c);
      if (req.spend) await this.ledger.add(c, req.threadId, req.spend.refs, req.spend.amount, req.spend.byModel);
      return 'committed';
    });
  }

  private async archivedRanges(c: PoolClient, threadId: string): Promise<ArchivedRange[]> {
    const { rows } = await c.query<{ archived: string | null }>(
      `SELECT archived FROM ${this.t('threads')} WHERE thread_id = $1`,
      [threadId],
    );
    return rows[0]?.archived ? (JSON.parse(rows[0].archived) as ArchivedRange[]) : [];
  }

  /** Until the transaction ends. Keyed by schema too, so stores in different schemas never wait for each other. */
  private async lockThread(c: PoolClient, threadId: string): Promise<void> {
    await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${this.schema}/${threadId}`]);
  }

  /**
   * A summary is saved by its compaction thread's commit, under that thread's lock; the summarized thread's lock is
   * taken too, so summaries of one thread get their order (`seq`) in commit order, as in SQLite's one-writer file.
   */
  private async saveSummary(c: PoolClient, s: NewSummary): Promise<void> {
    await this.lockThread(c, s.threadId);
    await c.query(
      `INSERT INTO ${this.t('summaries')} (thread_id, source_thread_id, up_to, summary) VALUES ($1, $2, $3, $4)
       ON CONFLICT (thread_id, source_thread_id) DO UPDATE SET up_to = excluded.up_to, summary = excluded.summary`,
      [s.threadId, s.sourceThreadId, s.upTo, s.summary],
    );
  }

  async findToolCall(
    threadId: string,
    callId: string,
    before = ALL,
  ): Promise<Extract<HistoryItem, { kind: 'tool_call' }> | undefined> {
    const [row] = await this.query<{ item: string }>(
      `SELECT item FROM ${this.t('items')} WHERE thread_id = $1 AND call_id = $2 AND position < $3::bigint ORDER BY position LIMIT 1`,
      [threadId, callId, before],
    );
    return row && (JSON.parse(row.item) as Extract<HistoryItem, { kind: 'tool_call' }>);
  }

  async latestSummary(
    threadId: string,
    maxUpTo = ALL,
    hidden: readonly ArchivedRange[] = [],
  ): Promise<Summary | undefined> {
    const merged = mergeRanges(hidden);
    // The hidden ranges as two array parameters: one statement however many there are (two parameters per range
    // reached PostgreSQL's 65,535 past 32,766 ranges).
    const skip =
      merged.length === 0
        ? ''
        : ` AND NOT EXISTS (SELECT 1 FROM unnest($3::bigint[], $4::bigint[]) AS h(f, t) WHERE up_to > h.f AND up_to <= h.t)`;
    const [row] = await this.query<{ summary: string; up_to: number }>(
      `SELECT summary, up_to FROM ${this.t('summaries')} WHERE thread_id = $1 AND up_to <= $2::bigint${skip} ORDER BY seq DESC LIMIT 1`,
      merged.length === 0 ? [threadId, maxUpTo] : [threadId, maxUpTo, merged.map(([f]) => f), merged.map(([, t]) => t)],
    );
    return row && { summary: row.summary, upTo: row.up_to };
  }

  async stageInput(data: Uint8Array): Promise<StagedRef> {
    await this.migrate();
    return this.staged.stage(data);
  }

  async loadStaged(ref: StagedRef): Promise<Uint8Array | undefined> {
    await this.migrate();
    return this.staged.load(ref);
  }

  async discardStaged(ids: readonly string[]): Promise<void> {
    await this.migrate();
    await this.staged.remove(ids);
  }

  async setBudget(ref: BudgetRef, budget: Budget | null): Promise<void> {
    await this.migrate();
    await this.ledger.set(ref, budget);
  }

  async budgets(refs: readonly BudgetRef[]): Promise<BudgetState[]> {
    await this.migrate();
    return this.ledger.get(refs);
  }

  async waitForBudget(threadId: string, refs: readonly BudgetRef[]): Promise<void> {
    await this.migrate();
    await this.ledger.wait(threadId, refs);
  }

  async budgetWaiters(ref: BudgetRef): Promise<string[]> {
    await this.migrate();
    return this.ledger.waiters(ref);
  }

  async spendByModel(ref: BudgetRef): Promise<ModelSpend[]> {
    await this.migrate();
    return this.ledger.byModel(ref);
  }

  /** Ends the pool (waiting for queries in flight). Closing twice is harmless. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.pool.end();
  }
}
