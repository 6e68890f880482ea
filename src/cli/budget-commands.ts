/**
 * `budget set` / `budget show` and `usage` (issue 27 §1): a thread's, an agent tree's or a tenant's limits and spend,
 * in the conversation store every worker reads. `budget set` also wakes the threads waiting over budget under it.
 */
import type { Command } from 'commander';
import { type Budget, type BudgetState, BUDGET_FIELDS } from '../core/budget';
import type { BudgetTarget } from '../client/budgets';
import { CliError } from './target';
import { type Out, withClient } from './thread-commands';

interface ScopeFlags {
  thread?: string;
  tree?: string;
  tenant?: string;
}

interface SetFlags extends ScopeFlags {
  inputTokens?: string;
  outputTokens?: string;
  totalTokens?: string;
  usd?: string;
  none?: boolean;
}

const withScopes = (c: Command): Command =>
  c
    .option('--thread <id>', 'the thread (its own usage)')
    .option('--tree <rootId>', "the agent tree of this root thread (its usage and its children's)")
    .option('--tenant <key>', 'the tenant (set at start; default: the root thread id)');

function targetsOf(flags: ScopeFlags): BudgetTarget[] {
  const targets: BudgetTarget[] = [];
  if (flags.thread !== undefined) targets.push({ thread: flags.thread });
  if (flags.tree !== undefined) targets.push({ tree: flags.tree });
  if (flags.tenant !== undefined) targets.push({ tenant: flags.tenant });
  if (targets.length === 0) throw new CliError('name a scope: --thread <id>, --tree <rootId> or --tenant <key>');
  return targets;
}

function number(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new CliError(`${flag} takes a number >= 0, not '${value}'`);
  return n;
}

function budgetOf(flags: SetFlags): Budget | null {
  const b: Budget = {};
  if (flags.inputTokens !== undefined) b.inputTokens = number('--input-tokens', flags.inputTokens);
  if (flags.outputTokens !== undefined) b.outputTokens = number('--output-tokens', flags.outputTokens);
  if (flags.totalTokens !== undefined) b.totalTokens = number('--total-tokens', flags.totalTokens);
  if (flags.usd !== undefined) b.usd = number('--usd', flags.usd);
  const given = Object.keys(b).length > 0;
  if (flags.none && given) throw new CliError('--none removes the budget: give no limits with it');
  if (!flags.none && !given)
    throw new CliError('give at least one limit (--input-tokens, --output-tokens, --total-tokens, --usd) or --none');
  return flags.none ? null : b;
}

const limitText = (b: Budget | undefined) =>
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

export function registerBudgetCommands(program: Command, out: Out): void {
  const budget = program.command('budget').description('token and money budgets of threads, agent trees and tenants');

  withScopes(budget.command('set').description('set (or --none: remove) a budget; wakes the threads waiting on it'))
    .option('--input-tokens <n>', 'limit of input tokens')
    .option('--output-tokens <n>', 'limit of output tokens')
    .option('--total-tokens <n>', 'limit of total tokens')
    .option('--usd <n>', "limit in US dollars (by the workers' price table)")
    .option('--none', 'remove the budget')
    .action(async (flags: SetFlags, cmd: Command) => {
      const targets = targetsOf(flags);
      const limits = budgetOf(flags);
      await withClient(
        cmd,
        async (client) => {
          for (const target of targets) {
            const { ref, woken } = await client.setBudget(target, limits);
            out(
              `${ref.scope} ${ref.key}: budget ${limits ? limitText(limits) : 'removed'}` +
                (woken.length > 0 ? `; woke ${woken.length} waiting thread(s): ${woken.join(', ')}` : ''),
            );
          }
        },
        { stage: true },
      );
    });

  const show = async (flags: ScopeFlags & { json?: boolean }, cmd: Command) => {
    const targets = targetsOf(flags);
    await withClient(cmd, async (client) => {
      for (const s of await client.budgets(...targets)) out(flags.json ? JSON.stringify(s) : budgetLine(s));
    });
  };
  withScopes(budget.command('show').description('limits and spend so far'))
    .option('--json', 'one JSON object per scope')
    .action(show);
  withScopes(program.command('usage').description('tokens, cost and slices so far, by thread, tree or tenant'))
    .option('--json', 'one JSON object per scope')
    .action(show);
}
