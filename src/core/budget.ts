/**
 * Budgets (issue 27 §1): limits in tokens and money at three scopes — a thread, its agent tree (keyed by the root
 * thread id) and a tenant (a key the caller sets at start, inherited by children; default the root thread id) — and
 * the pure rule that says whether a scope's spend has reached its limit. Plain JSON, no dependencies: workflow code
 * reads the signal payload with it, the slice checks with it, the stores keep its shapes.
 */

/** Where a budget applies. `tree`: keyed by the root thread id; every thread of the tree adds its usage to it. */
export type BudgetScope = 'thread' | 'tree' | 'tenant';

export const BUDGET_SCOPES: readonly BudgetScope[] = ['thread', 'tree', 'tenant'];

/** One scope's key: a thread id, a root thread id, or a tenant key. */
export interface BudgetRef {
  scope: BudgetScope;
  key: string;
}

/** Limits; an absent field is no limit. A slice may start while every set field's spend is below its limit. */
export interface Budget {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  /** US dollars, by the worker's price table (`src/model/prices.ts`); slices of unpriced models add nothing. */
  usd?: number;
}

export const BUDGET_FIELDS: readonly (keyof Budget)[] = ['inputTokens', 'outputTokens', 'totalTokens', 'usd'];

/** What one committed slice adds to each of its scopes. */
export interface SpendAmount {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  usd: number;
  /** The slice's model had no price: its tokens count, its money does not. */
  unpriced: boolean;
}

/** A scope's spend so far: committed slices only (a retried slice, idempotent by slice id, counts once). */
export interface Spend {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  usd: number;
  slices: number;
  /** Slices whose model had no price (their money is not in `usd`). */
  unpricedSlices: number;
}

export const ZERO_SPEND: Spend = {
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  usd: 0,
  slices: 0,
  unpricedSlices: 0,
};

/**
 * What one committed slice adds to its scopes' spend per model (issue 40): one entry per model that served rounds of
 * it (two after routing moved it), each priced with that model's own prices.
 */
export interface ModelSpendAmount {
  model: string;
  amount: SpendAmount;
}

/**
 * A scope's spend on one model: the tokens and money of its rounds on that model; `slices` counts the slices that had
 * rounds on it (a routed slice counts for each of its models, so these may sum to more than the scope's slices).
 */
export interface ModelSpend extends Spend {
  model: string;
}

/** `byModel` with one entry per model (a model named twice has its amounts summed), in first-seen order. */
export function mergeModelAmounts(byModel: readonly ModelSpendAmount[]): ModelSpendAmount[] {
  const merged = new Map<string, SpendAmount>();
  for (const { model, amount: a } of byModel) {
    const m = merged.get(model);
    merged.set(
      model,
      m
        ? {
            inputTokens: m.inputTokens + a.inputTokens,
            outputTokens: m.outputTokens + a.outputTokens,
            totalTokens: m.totalTokens + a.totalTokens,
            usd: m.usd + a.usd,
            unpriced: m.unpriced || a.unpriced,
          }
        : { ...a },
    );
  }
  return [...merged].map(([model, amount]) => ({ model, amount }));
}

/** Orders {@link ModelSpend}s by model id (code units: the same in every store, whatever a database's collation). */
export const byModelOrder = (a: { model: string }, b: { model: string }): number =>
  a.model < b.model ? -1 : a.model > b.model ? 1 : 0;

/** A scope's limit (if one is set) and spend; `byModel` (sorted by model) when asked for (`usage --by-model`). */
export interface BudgetState {
  ref: BudgetRef;
  limit?: Budget;
  spend: Spend;
  byModel?: ModelSpend[];
}

/** The first limit of a scope that its spend has reached. */
export interface BudgetExceeded {
  scope: BudgetScope;
  key: string;
  field: keyof Budget;
  limit: number;
  spend: number;
}

/** The limit `state`'s spend has reached, if any (fields in {@link BUDGET_FIELDS} order). */
export function exceededIn(state: BudgetState): BudgetExceeded | undefined {
  const { limit, spend, ref } = state;
  if (!limit) return undefined;
  for (const field of BUDGET_FIELDS) {
    const max = limit[field];
    if (max !== undefined && spend[field] >= max)
      return { scope: ref.scope, key: ref.key, field, limit: max, spend: spend[field] };
  }
  return undefined;
}

/** The first scope of `states` (thread, tree, tenant order as given) over its budget. */
export function firstExceeded(states: readonly BudgetState[]): BudgetExceeded | undefined {
  for (const s of states) {
    const e = exceededIn(s);
    if (e) return e;
  }
  return undefined;
}

/** The three scopes a thread's slice is checked against and billed to; the tenant defaults to the root thread id. */
export function budgetRefs(threadId: string, rootThreadId: string, tenant: string | undefined): BudgetRef[] {
  return [
    { scope: 'thread', key: threadId },
    { scope: 'tree', key: rootThreadId },
    { scope: 'tenant', key: tenant ?? rootThreadId },
  ];
}

/** Adds `amount` to `spend` (a new object). */
export function addSpend(spend: Spend, amount: SpendAmount): Spend {
  return {
    inputTokens: spend.inputTokens + amount.inputTokens,
    outputTokens: spend.outputTokens + amount.outputTokens,
    totalTokens: spend.totalTokens + amount.totalTokens,
    usd: spend.usd + amount.usd,
    slices: spend.slices + 1,
    unpricedSlices: spend.unpricedSlices + (amount.unpriced ? 1 : 0),
  };
}

/** Why `value` is not a {@link Budget} (non-negative finite numbers, known fields only), or undefined. */
export function budgetViolation(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'a budget is an object';
  for (const [k, v] of Object.entries(value)) {
    if (!(BUDGET_FIELDS as readonly string[]).includes(k))
      return `unknown budget field '${k}' (known: ${BUDGET_FIELDS.join(', ')})`;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return `budget field '${k}' must be a number >= 0`;
  }
  return undefined;
}

/**
 * The `budget` signal's payload: `{}` (budgets changed: check again), or `{ scope, budget }` to set this thread's
 * (`thread`), its tree's (`tree`) or its tenant's (`tenant`) limits from a plain `temporal workflow signal`; the key is
 * the thread's own for that scope. `budget: null` removes the limit.
 */
export interface BudgetSignal {
  scope?: BudgetScope;
  budget?: Budget | null;
}

/** The signal payload checked: a {@link BudgetSignal}, or why not. */
export function parseBudgetSignal(value: unknown): { ok: BudgetSignal } | { error: string } {
  if (value === undefined || value === null) return { ok: {} };
  if (typeof value !== 'object' || Array.isArray(value)) return { error: 'the budget signal takes an object' };
  const { scope, budget, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) return { error: `unknown field '${extra[0]}'` };
  if (budget === undefined) return scope === undefined ? { ok: {} } : { error: 'scope without budget' };
  if (scope === undefined || !(BUDGET_SCOPES as readonly unknown[]).includes(scope))
    return { error: `scope must be one of ${BUDGET_SCOPES.join(', ')}` };
  if (budget === null) return { ok: { scope: scope as BudgetScope, budget: null } };
  const bad = budgetViolation(budget);
  return bad ? { error: bad } : { ok: { scope: scope as BudgetScope, budget: budget as Budget } };
}

/** `totalTokens` limit 1000, spent 1200 → `tree abc: totalTokens 1200 of 1000`. */
export function exceededText(e: BudgetExceeded): string {
  return `${e.scope} ${e.key}: ${e.field} ${e.field === 'usd' ? e.spend.toFixed(4) : e.spend} of ${e.limit}`;
}

/**
 * Budget updates as the thread keeps them: the latest per scope, in the order of their last arrival. Setting a limit
 * twice is setting it once, so a flood of `budget` signals never grows the thread's state or a slice's input beyond one
 * update per scope. Pure: workflow code calls it.
 */
export function latestPerScope<T extends { scope: string }>(updates: readonly T[]): T[] {
  const last = new Map<string, number>();
  updates.forEach((u, i) => last.set(u.scope, i));
  return updates.filter((u, i) => last.get(u.scope) === i);
}
