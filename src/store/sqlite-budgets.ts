/**
 * The SQLite store's budget ledger (issue 27 §1): limits and spend per (scope, key), and the threads stopped for
 * budget. A commit adds its slice's spend in its own transaction, so a duplicate commit (a retried slice) adds none.
 */
import type Database from 'better-sqlite3';
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

/** Migration 5. Spend columns are totals; `usd` is a float sum (a budget needs no cent-exact ledger). */
export const BUDGET_MIGRATION = `CREATE TABLE budget_limits (
     scope TEXT NOT NULL,
     key TEXT NOT NULL,
     limits TEXT NOT NULL,
     PRIMARY KEY (scope, key)
   ) WITHOUT ROWID;
   CREATE TABLE budget_spend (
     scope TEXT NOT NULL,
     key TEXT NOT NULL,
     input_tokens INTEGER NOT NULL,
     output_tokens INTEGER NOT NULL,
     total_tokens INTEGER NOT NULL,
     usd REAL NOT NULL,
     slices INTEGER NOT NULL,
     unpriced_slices INTEGER NOT NULL,
     PRIMARY KEY (scope, key)
   ) WITHOUT ROWID;
   CREATE TABLE budget_waiting (
     scope TEXT NOT NULL,
     key TEXT NOT NULL,
     thread_id TEXT NOT NULL,
     PRIMARY KEY (scope, key, thread_id)
   ) WITHOUT ROWID;
   CREATE INDEX budget_waiting_thread ON budget_waiting(thread_id);`;

/**
 * Migration 10 (issue 40): spend per (scope, key, model), added by the same commits as `budget_spend`. Its own table
 * rather than rows of `budget_spend` under an extra scope: the model is a column, not a suffix of a key that a tenant
 * key could imitate, and budgets and their reads stay as they were.
 */
export const MODEL_SPEND_MIGRATION = `CREATE TABLE budget_model_spend (
     scope TEXT NOT NULL,
     key TEXT NOT NULL,
     model TEXT NOT NULL,
     input_tokens INTEGER NOT NULL,
     output_tokens INTEGER NOT NULL,
     total_tokens INTEGER NOT NULL,
     usd REAL NOT NULL,
     slices INTEGER NOT NULL,
     unpriced_slices INTEGER NOT NULL,
     PRIMARY KEY (scope, key, model)
   ) WITHOUT ROWID;`;

interface SpendRow {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  usd: number;
  slices: number;
  unpriced_slices: number;
}

export class SqliteBudgets {
  // Prepared on first use: a read-only store may sit on a file from before migration 5.
  private stmts?: ReturnType<SqliteBudgets['prepare']>;

  constructor(private readonly db: Database.Database) {}

  private prepare() {
    return {
      setLimit: this.db.prepare<[string, string, string]>(
        `INSERT INTO budget_limits (scope, key, limits) VALUES (?, ?, ?)
         ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits`,
      ),
      removeLimit: this.db.prepare<[string, string]>('DELETE FROM budget_limits WHERE scope = ? AND key = ?'),
      limit: this.db.prepare<[string, string], { limits: string }>(
        'SELECT limits FROM budget_limits WHERE scope = ? AND key = ?',
      ),
      spend: this.db.prepare<[string, string], SpendRow>('SELECT * FROM budget_spend WHERE scope = ? AND key = ?'),
      addSpend: this.db.prepare(
        `INSERT INTO budget_spend (scope, key, input_tokens, output_tokens, total_tokens, usd, slices, unpriced_slices)
         VALUES (@scope, @key, @inputTokens, @outputTokens, @totalTokens, @usd, 1, @unpriced)
         ON CONFLICT (scope, key) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens,
           output_tokens = output_tokens + excluded.output_tokens, total_tokens = total_tokens + excluded.total_tokens,
           usd = usd + excluded.usd, slices = slices + 1, unpriced_slices = unpriced_slices + excluded.unpriced_slices`,
      ),
      wait: this.db.prepare<[string, string, string]>(
        'INSERT OR IGNORE INTO budget_waiting (scope, key, thread_id) VALUES (?, ?, ?)',
      ),
      waiters: this.db.prepare<[string, string], { thread_id: string }>(
        'SELECT thread_id FROM budget_waiting WHERE scope = ? AND key = ? ORDER BY thread_id',
      ),
      forget: this.db.prepare<[string]>('DELETE FROM budget_waiting WHERE thread_id = ?'),
    };
  }

  private get s() {
    return (this.stmts ??= this.prepare());
  }

  // Apart from the others: a read-only store may sit on a file from before migration 10 (it then has no rows to show).
  private modelStmts?: ReturnType<SqliteBudgets['prepareModels']>;

  private prepareModels() {
    return {
      spend: this.db.prepare<[string, string], SpendRow & { model: string }>(
        'SELECT * FROM budget_model_spend WHERE scope = ? AND key = ?',
      ),
      add: this.db.prepare(
        `INSERT INTO budget_model_spend (scope, key, model, input_tokens, output_tokens, total_tokens, usd, slices, unpriced_slices)
         VALUES (@scope, @key, @model, @inputTokens, @outputTokens, @totalTokens, @usd, 1, @unpriced)
         ON CONFLICT (scope, key, model) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens,
           output_tokens = output_tokens + excluded.output_tokens, total_tokens = total_tokens + excluded.total_tokens,
           usd = usd + excluded.usd, slices = slices + 1, unpriced_slices = unpriced_slices + excluded.unpriced_slices`,
      ),
    };
  }

  private get m() {
    if (this.modelStmts) return this.modelStmts;
    const exists = this.db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'budget_model_spend'")
      .get();
    return exists ? (this.modelStmts = this.prepareModels()) : undefined;
  }

  set(ref: BudgetRef, budget: Budget | null): void {
    if (budget) this.s.setLimit.run(ref.scope, ref.key, JSON.stringify(budget));
    else this.s.removeLimit.run(ref.scope, ref.key);
  }

  get(refs: readonly BudgetRef[]): BudgetState[] {
    return refs.map((ref) => {
      const l = this.s.limit.get(ref.scope, ref.key);
      const r = this.s.spend.get(ref.scope, ref.key);
      const spend = r ? spendOf(r) : { ...ZERO_SPEND };
      return l ? { ref: { ...ref }, limit: JSON.parse(l.limits) as Budget, spend } : { ref: { ...ref }, spend };
    });
  }

  /** Inside the commit's transaction. */
  add(threadId: string, refs: readonly BudgetRef[], amount: SpendAmount, byModel?: readonly ModelSpendAmount[]): void {
    for (const ref of refs) this.s.addSpend.run({ ...ref, ...amount, unpriced: amount.unpriced ? 1 : 0 });
    const models = mergeModelAmounts(byModel ?? []);
    if (models.length > 0) {
      const add = this.m!.add;
      for (const ref of refs)
        for (const { model, amount: a } of models) add.run({ ...ref, model, ...a, unpriced: a.unpriced ? 1 : 0 });
    }
    this.s.forget.run(threadId);
  }

  byModel(ref: BudgetRef): ModelSpend[] {
    const rows = this.m?.spend.all(ref.scope, ref.key) ?? [];
    return rows.map((r) => ({ model: r.model, ...spendOf(r) })).sort(byModelOrder);
  }

  wait(threadId: string, refs: readonly BudgetRef[]): void {
    this.db.transaction(() => {
      for (const ref of refs) this.s.wait.run(ref.scope, ref.key, threadId);
    })();
  }

  waiters(ref: BudgetRef): string[] {
    return this.s.waiters.all(ref.scope, ref.key).map((r) => r.thread_id);
  }
}

const spendOf = (r: SpendRow) => ({
  inputTokens: r.input_tokens,
  outputTokens: r.output_tokens,
  totalTokens: r.total_tokens,
  usd: r.usd,
  slices: r.slices,
  unpricedSlices: r.unpriced_slices,
});
