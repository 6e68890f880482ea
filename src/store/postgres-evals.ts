/** The PostgreSQL store's records for evals (`eval-records.ts`): its slices in commit order, and outcome scores. */
import type { Pool } from 'pg';
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
import type { TableName } from './postgres-schema';

/**
 * The migration after the capacity one (issue 29 §1). `seq` orders scores as they were stored; `value` is a double, as
 * the SQLite store's REAL; `recorded_at` is ms since the epoch, as in SQLite, so both return the same numbers.
 */
export const scoresMigration = (t: TableName): string => `
    CREATE TABLE ${t('scores')} (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      thread_id text NOT NULL,
      slice_id text,
      name text NOT NULL,
      value double precision NOT NULL,
      note text,
      recorded_at bigint NOT NULL
    );
    CREATE INDEX ON ${t('scores')} (thread_id, name);`;

export class PostgresEvals implements EvalRecords {
  /** `ready`: the store's migration, awaited before every query. */
  constructor(
    private readonly pool: Pool,
    private readonly t: TableName,
    private readonly ready: () => Promise<unknown>,
  ) {}

  async slices(threadId: string) {
    await this.ready();
    const { rows } = await this.pool.query<{ slice_id: string; result: string }>(
      `SELECT slice_id, result FROM ${this.t('slices')} WHERE thread_id = $1`,
      [threadId],
    );
    return inCommitOrder(rows.map((r) => ({ sliceId: r.slice_id, result: JSON.parse(r.result) as SliceResult })));
  }

  async addScore(score: NewScore): Promise<OutcomeScore> {
    checkScore(score);
    await this.ready();
    const recordedAt = Date.now();
    await this.pool.query(
      `INSERT INTO ${this.t('scores')} (thread_id, slice_id, name, value, note, recorded_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [score.threadId, score.sliceId ?? null, score.name, score.value, score.note ?? null, recordedAt],
    );
    return { ...score, recordedAt };
  }

  async scores(query: ScoreQuery = {}): Promise<OutcomeScore[]> {
    await this.ready();
    const { rows } = await this.pool.query<ScoreRow>(
      `SELECT thread_id, slice_id, name, value, note, recorded_at FROM ${this.t('scores')}
       WHERE ($1::text IS NULL OR thread_id = $1) AND ($2::text IS NULL OR slice_id = $2)
         AND ($3::text IS NULL OR name = $3) ORDER BY seq`,
      [query.threadId ?? null, query.sliceId ?? null, query.name ?? null],
    );
    return rows.map(scoreOf);
  }
}
