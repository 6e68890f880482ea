import Database from 'better-sqlite3';
import type { SliceResult } from '../core/slice-protocol';
import type { HistoryItem, StagedRef, StoredItem, ThreadKind } from '../core/types';
import { fileIdentity, StoreFileGuard } from './file-guard';
import { createPrivateFile } from './file-modes';
import { backupDatabase } from './sqlite-backup';
import { ItemPrefixCache } from './item-cache';
import { SqliteStagedInputs, STAGED_INPUTS_MIGRATION } from './sqlite-staged';
import { BUDGET_MIGRATION, MODEL_SPEND_MIGRATION, SqliteBudgets } from './sqlite-budgets';
import { CAPACITY_MIGRATION, SqliteCapacity } from './sqlite-capacity';
import { SCORES_MIGRATION, SqliteEvals } from './sqlite-evals';
import type { EvalRecords } from './eval-records';
import type { Budget, BudgetRef, BudgetState, ModelSpend } from '../core/budget';
import { mergeRanges } from './archived-ranges';
import {
  ArchiveLimitError,
  CommitConflictError,
  MAX_ARCHIVED_RANGES,
  type CapacityLedger,
  type CommitRequest,
  type ConversationStore,
  type ArchivedRange,
  type NewThreadRecord,
  type Summary,
  type ThreadRecord,
} from './conversation-store';

/**
 * Forks (issue 28 §1): a thread record may name the thread and point its history starts from. Two nullable columns: a
 * fork adds one row and no items.
 */
const FORK_BASE_MIGRATION = `ALTER TABLE threads ADD COLUMN base_thread_id TEXT;
   ALTER TABLE threads ADD COLUMN base_up_to INTEGER;`;

/** Rewinds (issue 28 §2): the ranges of a thread's own items they archived, as JSON (`[[from, to], ...]`). */
const ARCHIVED_MIGRATION = 'ALTER TABLE threads ADD COLUMN archived TEXT;';

/** Schema migrations, applied in order; `PRAGMA user_version` records how many ran. Append only. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE threads (
     thread_id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     parent_thread_id TEXT,
     root_thread_id TEXT NOT NULL,
     spawn_order INTEGER,
     spawn_tool_call_id TEXT,
     closed INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   CREATE INDEX threads_parent ON threads(parent_thread_id);
   CREATE TABLE items (
     thread_id TEXT NOT NULL,
     position INTEGER NOT NULL,
     message_id TEXT NOT NULL,
     slice_id TEXT NOT NULL,
     item TEXT NOT NULL,
     PRIMARY KEY (thread_id, position)
   ) WITHOUT ROWID;
   CREATE TABLE slices (
     thread_id TEXT NOT NULL,
     slice_id TEXT NOT NULL,
     result TEXT NOT NULL,
     committed_at INTEGER NOT NULL,
     PRIMARY KEY (thread_id, slice_id)
   ) WITHOUT ROWID;`,
  // Compaction summaries; "latest" is the highest rowid, which an upsert from the same source keeps.
  `CREATE TABLE summaries (
     thread_id TEXT NOT NULL,
     source_thread_id TEXT NOT NULL,
     up_to INTEGER NOT NULL,
     summary TEXT NOT NULL,
     UNIQUE (thread_id, source_thread_id)
   );`,
  // Items move to a rowid table: a completion is ~1 KB, too wide for a WITHOUT ROWID b-tree (SQLite advises rows under
  // a twentieth of a page there); commits take half the time and loads two thirds.
  `CREATE TABLE items_rowid (
     thread_id TEXT NOT NULL,
     position INTEGER NOT NULL,
     message_id TEXT NOT NULL,
     slice_id TEXT NOT NULL,
     item TEXT NOT NULL,
     PRIMARY KEY (thread_id, position)
   );
   INSERT INTO items_rowid (thread_id, position, message_id, slice_id, item)
     SELECT thread_id, position, message_id, slice_id, item FROM items ORDER BY thread_id, position;
   DROP TABLE items;
   ALTER TABLE items_rowid RENAME TO items;`,
  STAGED_INPUTS_MIGRATION,
  BUDGET_MIGRATION,
  FORK_BASE_MIGRATION,
  CAPACITY_MIGRATION,
  SCORES_MIGRATION,
  ARCHIVED_MIGRATION,
  MODEL_SPEND_MIGRATION,
];

interface ThreadRow {
  thread_id: string;
  kind: ThreadKind;
  parent_thread_id: string | null;
  root_thread_id: string;
  spawn_order: number | null;
  spawn_tool_call_id: string | null;
  /** Forks only (FORK_BASE_MIGRATION). */
  base_thread_id: string | null;
  base_up_to: number | null;
  /** Rewound threads only (ARCHIVED_MIGRATION); absent in a file opened read-only before it. */
  archived?: string | null;
  closed: number;
}

function toRecord(row: ThreadRow): ThreadRecord {
  const r: ThreadRecord = {
    threadId: row.thread_id,
    kind: row.kind,
    rootThreadId: row.root_thread_id,
    closed: row.closed !== 0,
  };
  if (row.parent_thread_id !== null) r.parentThreadId = row.parent_thread_id;
  if (row.spawn_order !== null) r.spawnOrder = row.spawn_order;
  if (row.spawn_tool_call_id !== null) r.spawnToolCallId = row.spawn_tool_call_id;
  if (row.base_thread_id !== null) r.base = { threadId: row.base_thread_id, upTo: row.base_up_to ?? 0 };
  if (typeof row.archived === 'string') r.archived = JSON.parse(row.archived) as ArchivedRange[];
  return r;
}

/** A path SQLite opens as a file: not `:memory:`, not '' (a temporary database), not a `file:` URI. */
const isFilePath = (filename: string): boolean =>
  filename !== '' && filename !== ':memory:' && !filename.startsWith('file:');

/** A missing directory is left for better-sqlite3 to report, in its own words ("the directory does not exist"). */
function createPrivateFileIfDirExists(filename: string): void {
  try {
    createPrivateFile(filename);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** Threads shorter than this are not kept in the item cache. */
export const ITEM_CACHE_MIN_ITEMS = 8;

export interface SqliteStoreOptions {
  /** Open without write access (e.g. a client reading history next to a worker). */
  readonly?: boolean;
  /**
   * Parsed items of recently used threads kept in memory, bounded by their approximate heap size (0 turns it off). A
   * slice reads its thread's whole view every turn; with the cache it reads only what was appended since. Only
   * threads of at least {@link ITEM_CACHE_MIN_ITEMS} items are cached: a short history is cheap to read, and an agent
   * that ran one turn and waits must not hold memory.
   * @default 33554432 (32 MiB)
   */
  itemCacheBytes?: number;
}

/**
 * The embedded default store: one SQLite file in WAL mode, safe to share between a worker and readers in other
 * processes. Commits are single transactions, conditional on the expected length, idempotent per slice id.
 */
export class SqliteConversationStore implements ConversationStore {
  private readonly db: Database.Database;
  private readonly stmts;
  private readonly cache: ItemPrefixCache;
  private readonly staged: SqliteStagedInputs;
  private readonly ledger: SqliteBudgets;
  /** Provider limits' ledger (issue 27 §2), in the store file. */
  readonly capacity: CapacityLedger;
  /** Slices in commit order and outcome scores (issue 29 §1), in the store file. */
  readonly evals: EvalRecords;
  /** Writable file stores only: a reader has no commits to lose. */
  private readonly guard?: StoreFileGuard;

  constructor(
    readonly filename: string,
    options: SqliteStoreOptions = {},
  ) {
    // A new store file is private (0600) from the start; its -wal and -shm take its mode (./file-modes).
    if (!options.readonly && isFilePath(filename)) createPrivateFileIfDirExists(filename);
    const before = fileIdentity(filename);
    this.db = new Database(filename, { readonly: options.readonly ?? false });
    this.cache = new ItemPrefixCache({
      maxBytes: options.itemCacheBytes ?? 32 * 1024 * 1024,
      minItems: ITEM_CACHE_MIN_ITEMS,
    });
    this.db.pragma('busy_timeout = 5000');
    if (!options.readonly) {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.migrate();
      if (!this.db.memory) this.guard = new StoreFileGuard(filename, before);
    }
    this.staged = new SqliteStagedInputs(this.db);
    this.ledger = new SqliteBudgets(this.db);
    this.capacity = new SqliteCapacity(this.db, () => this.guard?.check());
    this.evals = new SqliteEvals(this.db, () => this.guard?.check());
    this.stmts = {
      getThread: this.db.prepare<[string], ThreadRow>('SELECT * FROM threads WHERE thread_id = ?'),
      insertThread: this.db.prepare(
        `INSERT OR IGNORE INTO threads (thread_id, kind, parent_thread_id, root_thread_id, spawn_order, spawn_tool_call_id, base_thread_id, base_up_to, created_at)
         VALUES (@threadId, @kind, @parentThreadId, @rootThreadId, @spawnOrder, @spawnToolCallId, @forkBaseThreadId, @forkBaseUpTo, @createdAt)`,
      ),
      close: this.db.prepare('UPDATE threads SET closed = 1 WHERE thread_id = ?'),
      load: this.db.prepare<[string, number, number], { message_id: string; item: string }>(
        'SELECT message_id, item FROM items WHERE thread_id = ? AND position >= ? AND position < ? ORDER BY position',
      ),
      // One seek down the primary key; COUNT(*) would walk every row of the thread, items included.
      length: this.db.prepare<[string], { n: number }>(
        'SELECT COALESCE(MAX(position) + 1, 0) AS n FROM items WHERE thread_id = ?',
      ),
      findSlice: this.db.prepare<[string, string], { result: string }>(
        'SELECT result FROM slices WHERE thread_id = ? AND slice_id = ?',
      ),
      insertItem: this.db.prepare(
        'INSERT INTO items (thread_id, position, message_id, slice_id, item) VALUES (?, ?, ?, ?, ?)',
      ),
      insertSlice: this.db.prepare(
        'INSERT INTO slices (thread_id, slice_id, result, committed_at) VALUES (?, ?, ?, ?)',
      ),
      saveSummary: this.db.prepare(
        `INSERT INTO summaries (thread_id, source_thread_id, up_to, summary) VALUES (@threadId, @sourceThreadId, @upTo, @summary)
         ON CONFLICT (thread_id, source_thread_id) DO UPDATE SET up_to = excluded.up_to, summary = excluded.summary`,
      ),
      findToolCall: this.db.prepare<[string, number, string], { item: string }>(
        `SELECT item FROM items WHERE thread_id = ? AND position < ?
           AND json_extract(item, '$.kind') = 'tool_call' AND json_extract(item, '$.id') = ? LIMIT 1`,
      ),
      latestSummary: this.db.prepare<[string, number], { summary: string; up_to: number }>(
        'SELECT summary, up_to FROM summaries WHERE thread_id = ? AND up_to <= ? ORDER BY rowid DESC LIMIT 1',
      ),
      // The hidden ranges as one JSON parameter (`[[from, to], ...]`): one statement however many there are (a clause
      // per range made SQLite refuse the query past 996 ranges, "Expression tree is too large").
      latestVisibleSummary: this.db.prepare<[string, number, string], { summary: string; up_to: number }>(
        `SELECT summary, up_to FROM summaries WHERE thread_id = ? AND up_to <= ?
           AND NOT EXISTS (SELECT 1 FROM json_each(?) AS h
             WHERE summaries.up_to > json_extract(h.value, '$[0]') AND summaries.up_to <= json_extract(h.value, '$[1]'))
         ORDER BY rowid DESC LIMIT 1`,
      ),
    };
  }

  private migrate(): void {
    const applied = this.db.pragma('user_version', { simple: true }) as number;
    for (let v = applied; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v] as string);
        this.db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  async ensureThread(record: NewThreadRecord): Promise<ThreadRecord> {
    // Read first: every slice calls this, and an INSERT OR IGNORE is a write transaction even when it inserts nothing.
    const existing = this.stmts.getThread.get(record.threadId);
    if (existing) return toRecord(existing);
    this.guard?.check();
    this.stmts.insertThread.run({
      threadId: record.threadId,
      kind: record.kind,
      parentThreadId: record.parentThreadId ?? null,
      rootThreadId: record.rootThreadId ?? record.threadId,
      spawnOrder: record.spawnOrder ?? null,
      spawnToolCallId: record.spawnToolCallId ?? null,
      forkBaseThreadId: record.base?.threadId ?? null,
      forkBaseUpTo: record.base?.upTo ?? null,
      createdAt: Date.now(),
    });
    return toRecord(this.stmts.getThread.get(record.threadId) as ThreadRow);
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    const row = this.stmts.getThread.get(threadId);
    return row && toRecord(row);
  }

  async markClosed(threadId: string): Promise<void> {
    this.guard?.check();
    this.stmts.close.run(threadId);
  }

  async load(threadId: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<StoredItem[]> {
    const cached = this.cache.get(threadId);
    if (to <= cached.length) return cached.slice(from, to);
    // Read from the end of the cached prefix when the request reaches back into it, and cache what was read.
    const start = Math.max(from, cached.length);
    let chars = 0;
    const read = this.stmts.load.all(threadId, start, to).map((r) => {
      chars += r.item.length;
      return { messageId: r.message_id, item: JSON.parse(r.item) as HistoryItem };
    });
    this.cache.extend(threadId, start, read, chars);
    return from < start ? [...cached.slice(from), ...read] : read;
  }

  async length(threadId: string): Promise<number> {
    return (this.stmts.length.get(threadId) as { n: number }).n;
  }

  async findSlice(threadId: string, sliceId: string): Promise<SliceResult | undefined> {
    // Every slice starts here, and its answer decides whether the slice counts as committed: never from a lost file,
    // and a lost file fails the slice before its model call.
    this.guard?.check();
    const row = this.stmts.findSlice.get(threadId, sliceId);
    return row && (JSON.parse(row.result) as SliceResult);
  }

  private readonly commitTx = (req: CommitRequest): 'committed' | 'duplicate' =>
    this.db
      .transaction((): 'committed' | 'duplicate' => {
        if (this.stmts.findSlice.get(req.threadId, req.sliceId)) return 'duplicate';
        const length = (this.stmts.length.get(req.threadId) as { n: number }).n;
        if (length !== req.expectedLength) throw new CommitConflictError(req.threadId, req.expectedLength, length);
        const row = req.archive ? this.stmts.getThread.get(req.threadId) : undefined;
        const ranges = row?.archived ? (JSON.parse(row.archived) as ArchivedRange[]) : [];
        if (req.archive && ranges.length >= MAX_ARCHIVED_RANGES) throw new ArchiveLimitError(req.threadId);
        req.items.forEach((s, i) =>
          this.stmts.insertItem.run(req.threadId, length + i, s.messageId, req.sliceId, JSON.stringify(s.item)),
        );
        this.stmts.insertSlice.run(req.threadId, req.sliceId, JSON.stringify(req.result), Date.now());
        if (req.summary) this.stmts.saveSummary.run(req.summary);
        if (req.archive) {
          this.db
            .prepare('UPDATE threads SET archived = ? WHERE thread_id = ?')
            .run(JSON.stringify([...ranges, req.archive]), req.threadId);
        }
        if (req.consumedStaged) this.staged.remove(req.consumedStaged);
        if (req.spend) this.ledger.add(req.threadId, req.spend.refs, req.spend.amount, req.spend.byModel);
        return 'committed';
      })
      .immediate();

  async commit(req: CommitRequest): Promise<'committed' | 'duplicate'> {
    this.guard?.check();
    const outcome = this.commitTx(req);
    // A file lost during the transaction took the commit with it: never report it.
    this.guard?.check();
    return outcome;
  }

  async findToolCall(
    threadId: string,
    callId: string,
    before = Number.MAX_SAFE_INTEGER,
  ): Promise<Extract<HistoryItem, { kind: 'tool_call' }> | undefined> {
    const row = this.stmts.findToolCall.get(threadId, before, callId);
    return row && (JSON.parse(row.item) as Extract<HistoryItem, { kind: 'tool_call' }>);
  }

  async latestSummary(
    threadId: string,
    maxUpTo = Number.MAX_SAFE_INTEGER,
    hidden: readonly ArchivedRange[] = [],
  ): Promise<Summary | undefined> {
    const merged = mergeRanges(hidden);
    const row =
      merged.length === 0
        ? this.stmts.latestSummary.get(threadId, maxUpTo)
        : this.stmts.latestVisibleSummary.get(threadId, maxUpTo, JSON.stringify(merged));
    return row && { summary: row.summary, upTo: row.up_to };
  }

  /**
   * Copies the store to a new file while it is in use (SQLite's online backup; see `./sqlite-backup`). Works on a store
   * whose file was lost too: this connection still reads what it held.
   */
  async backup(destination: string): Promise<void> {
    await backupDatabase(this.db, destination);
  }

  async stageInput(data: Uint8Array): Promise<StagedRef> {
    this.guard?.check();
    return this.staged.stage(data);
  }

  async loadStaged(ref: StagedRef): Promise<Uint8Array | undefined> {
    return this.staged.load(ref);
  }

  async discardStaged(ids: readonly string[]): Promise<void> {
    this.staged.remove(ids);
  }

  async setBudget(ref: BudgetRef, budget: Budget | null): Promise<void> {
    this.guard?.check();
    this.ledger.set(ref, budget);
  }

  async budgets(refs: readonly BudgetRef[]): Promise<BudgetState[]> {
    return this.ledger.get(refs);
  }

  async waitForBudget(threadId: string, refs: readonly BudgetRef[]): Promise<void> {
    this.guard?.check();
    this.ledger.wait(threadId, refs);
  }

  async budgetWaiters(ref: BudgetRef): Promise<string[]> {
    return this.ledger.waiters(ref);
  }

  async spendByModel(ref: BudgetRef): Promise<ModelSpend[]> {
    return this.ledger.byModel(ref);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
