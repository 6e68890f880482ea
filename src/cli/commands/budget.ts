/**
 * `budget set` / `budget show`: a thread's, an agent tree's or a tenant's token and money limits, and its spend, in the
 * conversation store every worker reads (issue 27 §1). `budget set` also wakes the threads waiting over budget under it.
 */
import type { Command } from 'commander';
import type { Budget } from '../../core/budget';
import { limitText, type ScopeFlags, showBudgets, targetsOf, withScopes } from '../budget-scopes';
import type { Out } from '../format';
import { CliError } from '../errors';
import { withClient } from '../with-client';

interface SetFlags extends ScopeFlags {
  inputTokens?: string;
  outputTokens?: string;
  totalTokens?: string;
  usd?: string;
  none?: boolean;
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

export function registerBudget(program: Command, out: Out): void {
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

  withScopes(budget.command('show').description('limits and spend so far'))
    .option('--by-model', 'and per model that served its slices, a line each under the scope')
    .option('--json', 'one JSON object per scope (with --by-model: its byModel list)')
    .action(showBudgets(out));
}
