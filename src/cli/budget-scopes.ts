/**
 * The scopes `budget` and `usage` name (a thread, an agent tree, a tenant: issue 27 §1), and how a scope's limits and
 * spend are shown.
 */
import type { Command } from 'commander';
import { type Budget, type BudgetState, BUDGET_FIELDS, type ModelSpend } from '../core/budget';
import type { BudgetTarget } from '../client/budgets';
import type { Out } from './format';
import { budgetsClient } from './lazy';
import { withCommandStore } from './store-of';
import { CliError } from './errors';

export interface ScopeFlags {
  thread?: string;
  tree?: string;
  tenant?: string;
}

export const withScopes = (c: Command): Command =>
  c
    .option('--thread <id>', 'the thread (its own usage)')
    .option('--tree <rootId>', "the agent tree of this root thread (its usage and its children's)")
    .option('--tenant <key>', 'the tenant (set at start; default: the root thread id)');

export function targetsOf(flags: ScopeFlags): BudgetTarget[] {
  const targets: BudgetTarget[] = [];
  if (flags.thread !== undefined) targets.push({ thread: flags.thread });
  if (flags.tree !== undefined) targets.push({ tree: flags.tree });
  if (flags.tenant !== undefined) targets.push({ tenant: flags.tenant });
  if (targets.length === 0) throw new CliError('name a scope: --thread <id>, --tree <rootId> or --tenant <key>');
  return targets;
}

export const limitText = (b: Budget | undefined) =>
  b
    ? BUDGET_FIELDS.filter((f) => b[f] !== undefined)
        .map((f) => `${f} ${b[f]}`)
        .join(', ')
    : 'none';

/** `tree root-1: limit totalTokens 1000 · spent 1200 tokens (800 in, 400 out), $0.0040, 12 slices`. */
export function budgetLine(s: BudgetState): string {
  const { spend } = s;
  const unpriced = spend.unpricedSlices > 0 ? ` (${spend.unpricedSlices} of unpriced models)` : '';
  return (
    `${s.ref.scope} ${s.ref.key}: limit ${limitText(s.limit)} · spent ${spend.totalTokens} tokens ` +
    `(${spend.inputTokens} in, ${spend.outputTokens} out), $${spend.usd.toFixed(4)}, ${spend.slices} slices${unpriced}`
  );
}

/** `  claude-sonnet-4: 900 tokens (600 in, 300 out), $0.0030, 4 slices` (under its scope's line). */
export function modelLine(m: ModelSpend): string {
  const unpriced = m.unpricedSlices > 0 ? ' (unpriced)' : '';
  return (
    `  ${m.model}: ${m.totalTokens} tokens (${m.inputTokens} in, ${m.outputTokens} out), ` +
    `$${m.usd.toFixed(4)}, ${m.slices} slices${unpriced}`
  );
}

/**
 * The action of `budget show` and `usage`: each named scope's limits and spend, one line (or JSON object) each; with
 * `usage --by-model`, its spend per model too, a line each under it (`byModel` in the JSON). Both are in the store
 * alone, so no Temporal server is needed; the store is found as every command finds it (`--store`, `INFINITY_STORE`, a
 * running `dev`).
 */
export const showBudgets =
  (out: Out) =>
  async (flags: ScopeFlags & { json?: boolean; byModel?: boolean }, cmd: Command): Promise<void> => {
    const targets = targetsOf(flags);
    await withCommandStore(cmd, async (store) => {
      for (const s of await budgetsClient().budgetStates(store, targets, { byModel: flags.byModel === true })) {
        if (flags.json) out(JSON.stringify(s));
        else {
          out(budgetLine(s));
          for (const m of s.byModel ?? []) out(modelLine(m));
        }
      }
    });
  };
