/** The SQLite store's records for evals (`eval-records.ts`): its slices in commit order, and outcome scores. */
import type Database from 'better-sqlite3';
import type { SliceResult } from '../core/slice-protocol';
import {
  checkScore,
  type EvalRecords,
  inCommitOrder,
  type NewScore,
  type OutcomeScore,
  type ScoreQuery,
  scoreOf,
  type ScoreRow,
} from './eval-records';

/** The migration after the fork base and capacity ones (issue 29 §1): scores, appended to, never updated. */
export const SCORES_MIGRATION = `CREATE TABLE scores (
     thread_id TEXT NOT NULL,
     slice_id TEXT,
     name TEXT NOT NULL,
     value REAL NOT NULL,
     note TEXT,
     recorded_at INTEGER NOT NULL
   );
   CREATE INDEX scores_thread ON scores(thread_id, name);`;

export class SqliteEvals implements EvalRecords {
  // Prepared on first use: a read-only store may sit on a file from before the scores migration.
  private stmts?: ReturnType<SqliteEvals['prepare']>;

  /** `check`: the store's lost-file guard, before a write. */
  constructor(
    private readonly db: Database.Database,
    private readonly check: () => void,
  ) {}

  private prepare() {
    return {
      slices: this.db.prepare<[string], { slice_id: string; result: string }>(
        'SELECT slice_id, result FROM slices WHERE thread_id = ?',
      ),
      add: this.db.prepare(
        'INSERT INTO scores (thread_id, slice_id, name, value, note, recorded_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      scores: this.db.prepare<[{ thread: string | null; slice: string | null; name: string | null }], ScoreRow>(
        `SELECT * FROM scores WHERE (@thread IS NULL OR thread_id = @thread) AND (@slice IS NULL OR slice_id = @slice)
           AND (@name IS NULL OR name = @name) ORDER BY rowid`,
      ),
    };
  }

  private get s() {
    return (this.stmts ??= this.prepare());
  }

  async slices(threadId: string) {
    return inCommitOrder(
      this.s.slices.all(threadId).map((r) => ({ sliceId: r.slice_id, result: JSON.parse(r.result) as SliceResult })),
    );
  }

  async addScore(score: NewScore): Promise<OutcomeScore> {
    checkScore(score);
    this.check();
    const recordedAt = Date.now();
    this.s.add.run(score.threadId, score.sliceId ?? null, score.name, score.value, score.note ?? null, recordedAt);
    return { ...score, recordedAt };
  }

  async scores(query: ScoreQuery = {}): Promise<OutcomeScore[]> {
    return this.s.scores
      .all({ thread: query.threadId ?? null, slice: query.sliceId ?? null, name: query.name ?? null })
      .map(scoreOf);
  }
}
