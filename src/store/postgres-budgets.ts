/**
 * The PostgreSQL store's budget ledger (issue 27 §1): limits and spend per (scope, key), and the threads stopped for
 * budget, shared by every worker on the database. A commit adds its slice's spend on its own transaction's
 * connection, so a duplicate commit (a retried slice, on any worker) adds none.
 */
import type { Pool, PoolClient } from 'pg';
import {
  type Budget,
  type BudgetRef,
  type BudgetState,
  byModelOrder,
  mergeModelAmounts,
  type ModelSpend,
  type ModelSpendAmount,
  type SpendAmount,
  ZERO_SPEND,
} from '../core/budget';
import type { TableName } from './postgres-schema';

/** Migration 2 (appended to `MIGRATIONS`). */
export const budgetMigration = (t: TableName): string => `
    CREATE TABLE ${t('budget_limits')} (
      scope text NOT NULL,
      key text NOT NULL,
      limits text NOT NULL,
      PRIMARY KEY (scope, key)
    );
    CREATE TABLE ${t('budget_spend')} (
      scope text NOT NULL,
      key text NOT NULL,
      input_tokens bigint NOT NULL,
      output_tokens bigint NOT NULL,
      total_tokens bigint NOT NULL,
      usd double precision NOT NULL,
      slices bigint NOT NULL,
      unpriced_slices bigint NOT NULL,
      PRIMARY KEY (scope, key)
    );
    CREATE TABLE ${t('budget_waiting')} (
      scope text NOT NULL,
      key text NOT NULL,
      thread_id text NOT NULL,
      PRIMARY KEY (scope, key, thread_id)
    );
    CREATE INDEX ON ${t('budget_waiting')} (thread_id);`;

/**
 * The migration after the archived ranges' (issue 40): spend per (scope, key, model), added by the same commits as
 * `budget_spend`. Its own table rather than rows of `budget_spend` under an extra scope: the model is a column, not a
 * suffix of a key that a tenant key could imitate, and budgets and their reads stay as they were.
 */
export const modelSpendMigration = (t: TableName): string => `
    CREATE TABLE ${t('budget_model_spend')} (
      scope text NOT NULL,
      key text NOT NULL,
      model text NOT NULL,
      input_tokens bigint NOT NULL,
      output_tokens bigint NOT NULL,
      total_tokens bigint NOT NULL,
      usd double precision NOT NULL,
      slices bigint NOT NULL,
      unpriced_slices bigint NOT NULL,
      PRIMARY KEY (scope, key, model)
    );`;

interface Row {
  scope: string;
  key: string;
  limits: string | null;
  input_tokens: string | null;
  output_tokens: string | null;
  total_tokens: string | null;
  usd: number | null;
  slices: string | null;
  unpriced_slices: string | null;
}

export class PostgresBudgets {
  constructor(
    private readonly pool: Pool,
    private readonly t: TableName,
  ) {}

  async set(ref: BudgetRef, budget: Budget | null): Promise<void> {
    if (budget)
      await this.pool.query(
        `INSERT INTO ${this.t('budget_limits')} (scope, key, limits) VALUES ($1, $2, $3)
         ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits`,
        [ref.scope, ref.key, JSON.stringify(budget)],
      );
    else
      await this.pool.query(`DELETE FROM ${this.t('budget_limits')} WHERE scope = $1 AND key = $2`, [
        ref.scope,
        ref.key,
      ]);
  }

  /** One statement for all the scopes (a slice's check is one round trip). */
  async get(refs: readonly BudgetRef[]): Promise<BudgetState[]> {
    if (refs.length === 0) return [];
    const { rows } = await this.pool.query<Row>(
      `SELECT r.scope, r.key, l.limits, s.input_tokens, s.output_tokens, s.total_tokens, s.usd, s.slices, s.unpriced_slices
       FROM unnest($1::text[], $2::text[]) AS r(scope, key)
       LEFT JOIN ${this.t('budget_limits')} l ON l.scope = r.scope AND l.key = r.key
       LEFT JOIN ${this.t('budget_spend')} s ON s.scope = r.scope AND s.key = r.key`,
      [refs.map((r) => r.scope), refs.map((r) => r.key)],
    );
    return refs.map((ref) => {
      const row = rows.find((r) => r.scope === ref.scope && r.key === ref.key);
      const spend =
        row && row.slices !== null
          ? {
              inputTokens: Number(row.input_tokens),
              outputTokens: Number(row.output_tokens),
              totalTokens: Number(row.total_tokens),
              usd: row.usd ?? 0,
              slices: Number(row.slices),
              unpricedSlices: Number(row.unpriced_slices),
            }
          : { ...ZERO_SPEND };
      return row?.limits
        ? { ref: { ...ref }, limit: JSON.parse(row.limits) as Budget, spend }
        : { ref: { ...ref }, spend };
    });
  }

  /** On the commit's connection, inside its transaction. */
  async add(
    c: PoolClient,
    threadId: string,
    refs: readonly BudgetRef[],
    a: SpendAmount,
    byModel?: readonly ModelSpendAmount[],
  ): Promise<void> {
    if (refs.length > 0)
      await c.query(
        `INSERT INTO ${this.t('budget_spend')} AS b (scope, key, input_tokens, output_tokens, total_tokens, usd, slices, unpriced_slices)
         SELECT scope, key, $3, $4, $5, $6, 1, $7 FROM unnest($1::text[], $2::text[]) AS r(scope, key)
         ON CONFLICT (scope, key) DO UPDATE SET input_tokens = b.input_tokens + excluded.input_tokens,
           output_tokens = b.output_tokens + excluded.output_tokens, total_tokens = b.total_tokens + excluded.total_tokens,
           usd = b.usd + excluded.usd, slices = b.slices + 1, unpriced_slices = b.unpriced_slices + excluded.unpriced_slices`,
        [
          refs.map((r) => r.scope),
          refs.map((r) => r.key),
          a.inputTokens,
          a.outputTokens,
          a.totalTokens,
          a.usd,
          a.unpriced ? 1 : 0,
        ],
      );
    // Each scope times each model (merged first: one statement may not update a row twice).
    const models = mergeModelAmounts(byModel ?? []);
    if (refs.length > 0 && models.length > 0)
      await c.query(
        `INSERT INTO ${this.t('budget_model_spend')} AS b (scope, key, model, input_tokens, output_tokens, total_tokens, usd, slices, unpriced_slices)
         SELECT r.scope, r.key, m.model, m.i, m.o, m.t, m.usd, 1, m.unpriced
         FROM unnest($1::text[], $2::text[]) AS r(scope, key)
         CROSS JOIN unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::float8[], $8::bigint[])
           AS m(model, i, o, t, usd, unpriced)
         ON CONFLICT (scope, key, model) DO UPDATE SET input_tokens = b.input_tokens + excluded.input_tokens,
           output_tokens = b.output_tokens + excluded.output_tokens, total_tokens = b.total_tokens + excluded.total_tokens,
           usd = b.usd + excluded.usd, slices = b.slices + 1, unpriced_slices = b.unpriced_slices + excluded.unpriced_slices`,
        [
          refs.map((r) => r.scope),
          refs.map((r) => r.key),
          models.map((m) => m.model),
          models.map((m) => m.amount.inputTokens),
          models.map((m) => m.amount.outputTokens),
          models.map((m) => m.amount.totalTokens),
          models.map((m) => m.amount.usd),
          models.map((m) => (m.amount.unpriced ? 1 : 0)),
        ],
      );
    await c.query(`DELETE FROM ${this.t('budget_waiting')} WHERE thread_id = $1`, [threadId]);
  }

  async byModel(ref: BudgetRef): Promise<ModelSpend[]> {
    const { rows } = await this.pool.query<Omit<Row, 'limits'> & { model: string }>(
      `SELECT * FROM ${this.t('budget_model_spend')} WHERE scope = $1 AND key = $2`,
      [ref.scope, ref.key],
    );
    return rows
      .map((r) => ({
        model: r.model,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        totalTokens: Number(r.total_tokens),
        usd: r.usd ?? 0,
        slices: Number(r.slices),
        unpricedSlices: Number(r.unpriced_slices),
      }))
      .sort(byModelOrder);
  }

  async wait(threadId: string, refs: readonly BudgetRef[]): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.t('budget_waiting')} (scope, key, thread_id)
       SELECT scope, key, $3 FROM unnest($1::text[], $2::text[]) AS r(scope, key) ON CONFLICT DO NOTHING`,
      [refs.map((r) => r.scope), refs.map((r) => r.key), threadId],
    );
  }

  async waiters(ref: BudgetRef): Promise<string[]> {
    const { rows } = await this.pool.query<{ thread_id: string }>(
      `SELECT thread_id FROM ${this.t('budget_waiting')} WHERE scope = $1 AND key = $2 ORDER BY thread_id`,
      [ref.scope, ref.key],
    );
    return rows.map((r) => r.thread_id);
  }
}
