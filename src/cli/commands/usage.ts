/** `usage`: tokens, cost and slices spent so far by a thread, an agent tree or a tenant (as `budget show` shows). */
import type { Command } from 'commander';
import { showBudgets, withScopes } from '../budget-scopes';
import type { Out } from '../format';

export function registerUsage(program: Command, out: Out): void {
  withScopes(program.command('usage').description('tokens, cost and slices so far, by thread, tree or tenant'))
    .option('--by-model', 'and per model that served its slices, a line each under the scope')
    .option('--json', 'one JSON object per scope (with --by-model: its byModel list)')
    .action(showBudgets(out));
}
