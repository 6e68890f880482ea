/**
 * What `eval`, `export`, `score` and `scores` do (docs/evals.md): they read (and `score` writes) the conversation store
 * alone, no Temporal server. Loaded when one of them runs: evals bring the model providers and ajv
 * (see lazy-actions.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  type EvalOptions,
  evalMarkdown,
  evaluateThreads,
  exactToolMatch,
  exportThread,
  importThreadExports,
  jsonSchemaCheck,
  MalformedExportError,
  parseThreadExport,
  recordScore,
  type Scorer,
  scores,
  type ThreadExport,
} from '../../evals';
import type { ConversationStore } from '../../store/conversation-store';
import type { OutcomeScore } from '../../store/eval-records';
import type { Out } from '../format';
import { modelRegistry } from '../lazy';
import { readJsonFile, writePrivateFile } from '../json-file';
import { loadAgents, loadTools, loadUserModule } from '../load-tools';
import { withCommandStore } from '../store-of';
import { CliError } from '../errors';

export interface EvalFlags {
  threads: string;
  model?: string;
  agent?: string;
  system?: string;
  systemFile?: string;
  tools?: string;
  scorers?: string;
  fromSlice?: string;
  onDivergence?: string;
  recordedModel?: string;
  concurrency?: string;
  json?: boolean;
  markdown?: boolean;
}

const wholeNumber = (flag: string, value: string | undefined, min: number): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new CliError(`${flag} must be a whole number from ${min}`);
  return Number(value);
};

/** An entry of `--threads` names an export file when it ends in .json or is an existing file; else a thread id. */
const isExportFile = (entry: string) => entry.endsWith('.json') || existsSync(entry);

const readExport = (file: string): ThreadExport =>
  parseThreadExport(
    readJsonFile(file, (m) => new MalformedExportError(m)),
    file,
  );

/** `--scorers <module>`: its `scorers` (an array of functions) and, optionally, its `onDivergence` function. */
function userScorers(path: string | undefined): { scorers: Scorer[]; onDivergence?: EvalOptions['onDivergence'] } {
  if (path === undefined) return { scorers: [] };
  const mod = loadUserModule(path);
  const list = mod.scorers ?? mod.default;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'function'))
    throw new CliError(`${path} must export \`scorers\`: an array of scorer functions`);
  if (mod.onDivergence !== undefined && typeof mod.onDivergence !== 'function')
    throw new CliError(`${path}: \`onDivergence\`, when exported, must be a function`);
  return {
    scorers: list as Scorer[],
    ...(mod.onDivergence !== undefined && { onDivergence: mod.onDivergence as EvalOptions['onDivergence'] }),
  };
}

function evalOptions(flags: EvalFlags, threads: string[]): EvalOptions {
  if (flags.json && flags.markdown) throw new CliError('--json and --markdown: choose one');
  if (flags.system !== undefined && flags.systemFile !== undefined)
    throw new CliError('--system and --system-file: choose one');
  const on = flags.onDivergence;
  if (on !== undefined && on !== 'stop' && on !== 'continue')
    throw new CliError(`--on-divergence must be stop or continue, got '${on}'`);
  const fromSlice = wholeNumber('--from-slice', flags.fromSlice, 0);
  const concurrency = wholeNumber('--concurrency', flags.concurrency, 1);
  const user = userScorers(flags.scorers);
  // The `--tools` module as `worker --tools` takes it: its `tools` are the default agent's, its `agents` the others.
  const tools = loadTools(flags.tools);
  const agents = loadAgents(flags.tools);
  if (flags.model === undefined && !agents)
    throw new CliError("name the candidate: --model, or a --tools module with `agents` (each slice's agent's model)");
  const system = flags.systemFile !== undefined ? readFileSync(flags.systemFile, 'utf8') : flags.system;
  const onDivergence = on ?? user.onDivergence;
  return {
    threads,
    ...(flags.model !== undefined && { model: modelRegistry().modelFromSpec(flags.model) }),
    ...(agents && { agents }),
    ...(flags.agent !== undefined && { agent: flags.agent }),
    scorers: [exactToolMatch(), jsonSchemaCheck(), ...user.scorers],
    ...(system !== undefined && { system }),
    ...(tools && { tools }),
    ...(fromSlice !== undefined && { fromSlice }),
    ...(onDivergence !== undefined && { onDivergence }),
    ...(flags.recordedModel !== undefined && { recordedModel: flags.recordedModel }),
    ...(concurrency !== undefined && { concurrency }),
  };
}

/**
 * `eval`: thread ids are read from the command's store; export files are imported into memory. With both, the ids'
 * threads are exported from the store into the same memory store, so one report covers all.
 */
export async function runEval(flags: EvalFlags, cmd: Command, out: Out): Promise<void> {
  const entries = flags.threads
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new CliError('--threads names no thread');
  const files = entries.filter(isExportFile);
  const ids = entries.filter((e) => !isExportFile(e));
  const exports = files.map(readExport);
  const threads = [...ids, ...exports.map((e) => e.threadId)];
  const options = evalOptions(flags, threads);
  const run = async (store: ConversationStore) => {
    const report = await evaluateThreads(store, options);
    out(flags.json ? JSON.stringify(report, null, 2) : evalMarkdown(report).trimEnd());
  };
  if (ids.length === 0) return run(await importThreadExports(exports));
  if (files.length === 0) return withCommandStore(cmd, run);
  const fromStore = await withCommandStore(cmd, (store) => Promise.all(ids.map((id) => exportThread(store, id))));
  return run(await importThreadExports([...fromStore, ...exports]));
}

/** `export <thread>`: the thread and what its history comes from, as one JSON file (`eval --threads <file>`). */
export async function runExport(threadId: string, opts: { out?: string }, cmd: Command, out: Out): Promise<void> {
  const exported = await withCommandStore(cmd, (store) => exportThread(store, threadId));
  const text = JSON.stringify(exported);
  if (opts.out === undefined) out(text);
  else writePrivateFile(opts.out, `${text}\n`);
}

/** A score's value: a number as written (`1`, `-0.5`, `2e3`), or `true`/`false` for 1/0. */
export function parseScoreValue(raw: string): number {
  if (raw === 'true' || raw === 'false') return raw === 'true' ? 1 : 0;
  if (!/^[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?$/i.test(raw.trim()))
    throw new CliError(`a score's value is a number (or true/false), got '${raw}'`);
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new CliError(`a score's value must be finite, got '${raw}'`);
  return n;
}

/** `--slice`: a number (`3` or `slice-3`) or a whole slice id. */
const sliceOf = (raw: string): number | string =>
  /^(slice-)?\d+$/.test(raw) ? Number(raw.replace(/^slice-/, '')) : raw;

export async function runScore(
  threadId: string,
  name: string,
  value: string,
  opts: { slice?: string; note?: string; json?: boolean },
  cmd: Command,
  out: Out,
): Promise<void> {
  const parsed = parseScoreValue(value);
  const stored = await withCommandStore(
    cmd,
    (store) =>
      recordScore(store, {
        threadId,
        name,
        value: parsed,
        ...(opts.slice !== undefined && { slice: sliceOf(opts.slice) }),
        ...(opts.note !== undefined && { note: opts.note }),
      }),
    { write: true },
  );
  out(opts.json ? JSON.stringify(stored) : `scored ${scoreLine(stored)}`);
}

export const scoreLine = (s: OutcomeScore): string =>
  `${s.threadId}${s.sliceId ? ` ${s.sliceId}` : ''}: ${s.name} = ${s.value} (${new Date(s.recordedAt).toISOString()})` +
  (s.note ? ` · ${s.note}` : '');

/** `scores --slice`: a whole slice id, or with `--thread` its number (`3`, `slice-3`). */
const sliceIdOf = (thread: string | undefined, raw: string): string => {
  const n = sliceOf(raw);
  return typeof n === 'number' && thread !== undefined ? `${thread}/slice-${n}` : raw;
};

export async function runScores(
  opts: { thread?: string; slice?: string; name?: string; json?: boolean },
  cmd: Command,
  out: Out,
): Promise<void> {
  const found = await withCommandStore(cmd, (store) =>
    scores(store, {
      ...(opts.thread !== undefined && { threadId: opts.thread }),
      ...(opts.slice !== undefined && { sliceId: sliceIdOf(opts.thread, opts.slice) }),
      ...(opts.name !== undefined && { name: opts.name }),
    }),
  );
  for (const s of found) out(opts.json ? JSON.stringify(s) : scoreLine(s));
}
