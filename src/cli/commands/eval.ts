/**
 * `eval --threads <ids|files> [--tools <module>] [--agent <name>] [--model <spec>]`: re-run recorded threads against a
 * candidate, offline (docs/evals.md).
 */
import type { Command } from 'commander';
import type { EvalFlags } from '../actions/eval';
import type { Out } from '../format';
import { evalAction } from '../lazy-actions';

export function registerEval(program: Command, out: Out): void {
  program
    .command('eval')
    .description(
      'replay recorded threads against a candidate model, offline: rebuilt requests, no tool runs, a report of ' +
        'tool choices, text similarity, tokens, cost and latency per slice (reads the store: --store)',
    )
    .requiredOption('--threads <list>', 'comma-separated thread ids (in the store) and/or files written by `export`')
    .option(
      '--model <spec>',
      "the candidate model, e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1, simulated (default: each slice's agent's)",
    )
    .option(
      '--agent <name>',
      'a candidate agent: every slice is rebuilt as if it had run it (its instructions, tools, model)',
    )
    .option('--system <text>', "the default agent's system prompt, or one to try (default: the runtime's)")
    .option('--system-file <file>', 'the same, from a file')
    .option(
      '--tools <module>',
      "the worker's --tools module: the default agent's `tools` and the `agents` (each slice rebuilt with its own)",
    )
    .option('--scorers <module>', 'a module exporting `scorers` (functions) and optionally `onDivergence`')
    .option('--from-slice <n>', 'the first slice the candidate answers; earlier ones are not called (default 0)')
    .option('--on-divergence <what>', 'stop that thread, or continue with the recorded result (default continue)')
    .option('--recorded-model <id>', "the recorded model's id, to price the recorded usage")
    .option('--concurrency <n>', 'threads evaluated at once (default 4)')
    .option('--json', 'the report as JSON')
    .option('--markdown', 'the report as Markdown (the default)')
    .action(async (flags: EvalFlags, cmd: Command) => evalAction().runEval(flags, cmd, out));
}
