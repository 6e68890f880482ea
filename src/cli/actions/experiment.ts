/**
 * What `experiment run` does (issue 29 §2, docs/experiments.md): a worker with the experiment's tools and the given
 * model, on a Temporal server (`--address`, or a dev server started for the run) and a new SQLite store, then every
 * variant, then the table. Loaded when it runs: it brings the worker and the model providers (see lazy-actions.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { DevServer } from '../../devserver/server';
import { retooledAgents } from '../../evals/agents';
import {
  ExperimentFileError,
  experimentMarkdown,
  experimentTools,
  parseExperiment,
  runExperiment,
  type ExperimentFile,
} from '../../experiments';
import { startLocalSystem } from '../../local-system';
import { colour, type Out } from '../format';
import { readJsonFile } from '../json-file';
import { loadAgents } from '../load-tools';
import { modelRegistry } from '../lazy';
import { CliError } from '../errors';
import { type TargetFlags } from '../target';
import { toStderr } from '../terminal-text';

export interface ExperimentFlags {
  model?: string;
  agents?: string;
  agent?: string;
  repeat?: string;
  concurrency?: string;
  json?: boolean;
}

const readExperiment = (file: string): ExperimentFile =>
  parseExperiment(
    readJsonFile(file, (m) => new ExperimentFileError(m)),
    file,
  );

/** A server someone else runs: the system uses it and leaves it running. */
const runningServer = (address: string, namespace: string): DevServer => ({
  address,
  namespace,
  dbFilename: '',
  pid: 0,
  workflowUrl: () => undefined,
  stop: async () => undefined,
});

export async function runExperimentCommand(
  file: string,
  flags: ExperimentFlags,
  cmd: Command,
  out: Out,
): Promise<void> {
  const exp = readExperiment(file);
  if (flags.repeat !== undefined && !/^[1-9]\d*$/.test(flags.repeat))
    throw new CliError('--repeat must be a whole number from 1');
  const repeat = Number(flags.repeat ?? 1);
  if (flags.concurrency !== undefined && !/^[1-9]\d*$/.test(flags.concurrency))
    throw new CliError('--concurrency must be a whole number from 1');
  if (flags.agent !== undefined && flags.agents === undefined) throw new CliError('--agent names one of --agents');
  if (flags.agent === undefined && flags.model === undefined)
    throw new CliError('name the candidate: --model, or --agents and --agent');
  const given = flags.model === undefined ? undefined : modelRegistry().modelFromSpec(flags.model);
  // The candidate agent and every agent it may spawn offer the experiment's tools (none runs).
  const own = loadAgents(flags.agents);
  if (flags.agents !== undefined && !own) throw new CliError(`${flags.agents} must export \`agents\` (defineAgent)`);
  const agents = own && retooledAgents(own, experimentTools(exp), given);
  const candidate = flags.agent === undefined ? undefined : agents!.find((a) => a.name === flags.agent);
  if (flags.agent !== undefined && !candidate)
    throw new CliError(
      `--agent: ${flags.agents} defines no agent '${flags.agent}' (it defines ${agents!.map((a) => a.name).join(', ')})`,
    );
  const model = given ?? candidate!.models[0]!.model;
  const globals = cmd.optsWithGlobals<TargetFlags>();
  const address = globals.address ?? process.env.TEMPORAL_ADDRESS;
  // Its own store and task queue: the runs' threads stay apart from any other work on the server.
  const dataDir = resolve(globals.dataDir ?? mkdtempSync(join(tmpdir(), `experiment-${exp.name}-`)));
  const system = await startLocalSystem({
    model,
    tools: experimentTools(exp),
    ...(agents && { agents }),
    dataDir,
    taskQueue: `experiment-${randomUUID()}`,
    ...(address !== undefined && {
      devServer: runningServer(address, globals.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default'),
    }),
  });
  try {
    const result = await runExperiment(system.client, exp, {
      repeat,
      ...(flags.agent !== undefined && { agent: flags.agent }),
      ...(flags.concurrency !== undefined && { concurrency: Number(flags.concurrency) }),
      // The decision quotes the model (a tool's name and arguments): toStderr shows its control characters.
      onVariant: (v) =>
        toStderr(
          colour.dim(
            `${v.threadId}: ${v.variant.order.slice(0, v.variant.count).join(' → ')} ` +
              `${v.variant.timing} ${v.variant.mode} → ${v.decision.label}\n`,
          ),
        ),
    });
    out(
      flags.json
        ? JSON.stringify({ model: model.id, store: system.storePath, ...result }, null, 2)
        : experimentMarkdown(result, model.id).trimEnd(),
    );
    if (!flags.json)
      out(`\nThe runs' threads are in ${system.storePath ?? dataDir}: \`eval\` and \`history\` read them there.`);
  } finally {
    await system.shutdown();
  }
}
