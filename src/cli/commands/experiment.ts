/**
 * `experiment run <file> --model <spec>` (or `--agents <module> --agent <name>`): an interleaving experiment on a real
 * runtime (docs/experiments.md).
 */
import type { Command } from 'commander';
import type { ExperimentFlags } from '../actions/experiment';
import type { Out } from '../format';
import { experimentAction } from '../lazy-actions';

export function registerExperiment(program: Command, out: Out): void {
  const experiment = program
    .command('experiment')
    .description('interleaving experiments: how the order, timing, count and mode of events change decisions');
  experiment
    .command('run')
    .description(
      'fork the base thread once per variant and repetition, run each on a worker with the given model, and ' +
        'tabulate the decisions per factor level (a dev server is started unless --address names one)',
    )
    .argument('<file>', 'an experiment file (JSON), e.g. docs/experiments/ci-events-race-question.json')
    .option(
      '--model <spec>',
      "the model, e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1, simulated (with --agent: in place of the agent's)",
    )
    .option(
      '--agents <module>',
      "a module exporting `agents` (defineAgent), e.g. the worker's --tools module; they offer the experiment's tools",
    )
    .option('--agent <name>', 'the candidate agent of --agents: its instructions and models run every variant')
    .option('--repeat <n>', 'runs of each variant (default 1)')
    .option('--concurrency <n>', 'variant runs at once (default 4)')
    .option('--json', 'the runs and the table as JSON')
    .action(async (file: string, flags: ExperimentFlags, cmd: Command) =>
      experimentAction().runExperimentCommand(file, flags, cmd, out),
    );
}
