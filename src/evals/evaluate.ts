/**
 * Replay-evals (issue 29 §1, docs/evals.md): recorded threads re-run offline against a candidate model. Each recorded
 * model request is rebuilt exactly as its slice built it — the model view of the thread as it stood (`modelView` over
 * the store cut at the slice's start), the slice's committed inputs, what earlier rounds of the slice flushed, projected
 * by the slice's own `modelRequest` — and from `fromSlice` on the candidate answers it. Before `fromSlice` nothing is
 * called; no tool ever runs; the store is only read.
 */
import { coveringRange, mergeRanges } from '../store/archived-ranges';
import type { AgentCatalog, AgentDefinition } from '../activities/agents';
import { modelRequest } from '../activities/completion';
import { modelView } from '../activities/history';
import type { SliceAgent } from '../core/agents';
import { threadSystemPrompt } from '../core/texts';
import { addUsage, type HistoryItem, type TokenUsage, type ToolResultContent } from '../core/types';
import { type PriceTable, priceOf, spendOf, tokensOf } from '../model/prices';
import type { ModelProvider } from '../model/provider';
import { visibleRanges } from '../store/chain';
import type { ConversationStore } from '../store/conversation-store';
import type { OutcomeScore } from '../store/eval-records';
import type { Tool } from '../tools/tool';
import { EvalAgents, type SlicePlan } from './agents';
import { recordAsOf, storeAsOf } from './as-of';
import { type CandidateTurn, runCandidate } from './candidate';
import { decisionLines, lineDiff, sameToolChoice, textSimilarity } from './compare';
import { EvalOptionError } from './errors';
import { type RecordedRound, type RecordedSliceView, readRecordedThread, type ToolChoice } from './recorded';
import type { RoundView, Scorer, ScoreValue } from './scorers';

/** A round where the candidate chose another tool or arguments than the record (or failed to answer). */
export type Divergence = RoundView;

/**
 * What happens after a divergence: `stop` the thread there; `continue` with the recorded result (teacher forcing: later
 * requests are the recorded ones); or `{ result }`: the candidate's call stands, answered with this tool result, and
 * later requests carry the candidate's turn and this result instead of the recorded ones.
 */
export type DivergenceAction = 'stop' | 'continue' | { result: string | ToolResultContent[] };

export interface EvalOptions {
  /** Thread ids in `store`. */
  threads: readonly string[];
  /**
   * The candidate model: it answers every slice, whose requests its agent's definition shapes (issue 40: the recorded
   * agent's, or `agent`'s). Required unless `agents` defines every agent the slices ran (or `agent`).
   * @default each slice's agent's first model
   */
  model?: ModelProvider;
  /**
   * The agents the recorded worker hosted (issue 40), as `createAgentWorker({ agents })` took them, or a catalog: each
   * slice is rebuilt with the definition of the agent it recorded — its instructions, tools and spawnable agents.
   * `default` (also every slice recorded before release 0.13), when not defined here, is `system` and `tools`.
   * @default none: every slice must have run the default agent
   */
  agents?: readonly AgentDefinition[] | AgentCatalog;
  /** A candidate agent (a name `agents` defines, or `default`): every slice is rebuilt as if it had run it. */
  agent?: string;
  /**
   * The default agent's instructions (a worker's own `systemPrompt`; the record does not hold it), or a prompt to try.
   * @default DEFAULT_SYSTEM_PROMPT, as a worker without `systemPrompt` sends
   */
  system?: string;
  /**
   * The default agent's tools, as the worker offered them (the built-in tools are always added, as a slice adds them).
   * @default [] (built-ins only)
   */
  tools?: readonly Tool[];
  /** The first slice number the candidate answers; earlier slices are skipped, nothing is called for them. @default 0 */
  fromSlice?: number;
  /** @default 'continue' */
  onDivergence?: 'stop' | 'continue' | ((d: Divergence) => DivergenceAction | Promise<DivergenceAction>);
  /** Run on every evaluated round, in order. @default [] */
  scorers?: readonly Scorer[];
  /**
   * A model id that prices the recorded usage of every slice.
   * @default the model each slice recorded (release 0.13 on; unpriced before)
   */
  recordedModel?: string;
  /** Prices before the shipped table (`model/prices.ts`). @default {} */
  prices?: PriceTable;
  /** Threads evaluated at once (the candidate's calls overlap). @default 4 */
  concurrency?: number;
  signal?: AbortSignal;
}

/** One evaluated model round. */
export interface RoundEval {
  round: number;
  recorded: { text: string; toolCall?: ToolChoice };
  candidate: { text: string; toolCall?: ToolChoice; error?: string };
  toolMatch: boolean;
  textSimilarity: number;
  usage?: TokenUsage;
  latencyMs: number;
  diverged: boolean;
  /** Recorded (`- `) against candidate (`+ `) decision lines; diverging rounds only. */
  diff?: string[];
  scores: ScoreValue[];
}

/** The agent a slice was rebuilt with (issue 40). */
export interface SliceAgentEval {
  /** The agent whose definition shaped the rebuilt requests: the recorded one, or the candidate `agent`. */
  name: string;
  /** The candidate model that answered. */
  model: string;
  /** What the slice recorded (release 0.13 on): its agent, model and definition hash. */
  recorded?: SliceAgent;
  /** The recorded agent's definition hashes now to `now`: it changed (instructions, tools or models) since the slice ran. */
  changed?: { now: string };
}

export interface SliceEval {
  slice: number;
  sliceId: string;
  agent: SliceAgentEval;
  recorded: { usage?: TokenUsage; usd?: number; error?: string; interrupted: boolean };
  candidate: { usage?: TokenUsage; usd?: number; latencyMs: number };
  rounds: RoundEval[];
  diverged: boolean;
  /** After a divergence: what the eval did (`onDivergence`). */
  resolution?: 'stopped' | 'teacher-forced' | 'supplied';
}

export interface ThreadEval {
  threadId: string;
  /** Committed slices in the record. */
  recordedSlices: number;
  /** The slices from `fromSlice` on that were evaluated. */
  slices: SliceEval[];
  /** Set when `onDivergence` stopped the thread. */
  stoppedAt?: { slice: number; round: number };
  /** Outcome scores stored with the thread or its slices (`score`), oldest first. */
  scores: OutcomeScore[];
}

export interface EvalTotals {
  threads: number;
  recordedSlices: number;
  evaluatedSlices: number;
  evaluatedRounds: number;
  divergedSlices: number;
  stoppedThreads: number;
  /** Rounds whose tool choice matched, of those evaluated (1 when none were). */
  toolMatchRate: number;
  meanTextSimilarity: number;
  /** Calls made to the candidate: one per evaluated round, none for recorded slices. */
  providerCalls: number;
  candidateErrors: number;
  candidateTokens: number;
  /** Undefined when the candidate's id has no price. */
  candidateUsd?: number;
  /** Tokens the record shows for the evaluated slices. */
  recordedTokens: number;
  /** With `recordedModel` priced. */
  recordedUsd?: number;
  candidateLatencyMs: number;
  /** Per scorer name: how many rounds it scored and their mean. */
  scores: Record<string, { count: number; mean: number }>;
}

/** An agent whose definition changed since some of the evaluated slices ran (their hash is not its hash now). */
export interface ChangedAgent {
  agent: string;
  /** The hash those slices recorded. */
  recorded: string;
  /** The definition's hash now. */
  now: string;
  /** Their ids. */
  slices: string[];
}

export interface EvalReport {
  /** The candidate model's id; without `model`, the ids of the agents' models, comma-separated. */
  model: string;
  /** The candidate agent, when `agent` named one. */
  agent?: string;
  recordedModel?: string;
  /** Agents whose definition changed since evaluated slices ran them: their requests are rebuilt with it as it is now. */
  changedAgents: ChangedAgent[];
  fromSlice: number;
  onDivergence: 'stop' | 'continue' | 'custom';
  threads: ThreadEval[];
  totals: EvalTotals;
}

/** A slice's recorded outputs replaced from a round on, by a `{ result }` divergence action. */
interface Override {
  /** Own positions `[from, to)` replaced. */
  from: number;
  to: number;
  items: HistoryItem[];
  /** Recorded calls of the replaced range: later results for them answer calls no longer in the history. */
  droppedCalls: Set<string>;
}

interface ThreadRun {
  store: ConversationStore;
  opts: EvalOptions;
  /** How each evaluated slice is rebuilt, planned before the first model call. */
  plans: Map<RecordedSliceView, SlicePlan>;
  counters: { calls: number };
}

/**
 * Evaluates `options.threads` of `store` against `options.model` (docs/evals.md).
 * @throws UnknownThreadError for a thread the store does not have (before any model call)
 * @example
 * ```ts
 * const report = await evaluateThreads(store, {
 *   threads: ['support-1', 'support-2'],
 *   model: modelFromSpec('anthropic:claude-sonnet-4-5'),
 *   fromSlice: 1,
 *   scorers: [exactToolMatch(), jsonSchemaCheck()],
 * });
 * console.log(evalMarkdown(report));
 * ```
 */
export async function evaluateThreads(store: ConversationStore, options: EvalOptions): Promise<EvalReport> {
  const fromSlice = options.fromSlice ?? 0;
  if (!Number.isInteger(fromSlice) || fromSlice < 0)
    throw new EvalOptionError(`fromSlice must be a whole number from 0, got ${fromSlice}`);
  if (options.threads.length === 0) throw new EvalOptionError('name at least one thread to evaluate');
  const concurrency = options.concurrency ?? 4;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new EvalOptionError(`concurrency must be a whole number from 1, got ${concurrency}`);
  // Every thread is read before the first model call: a typo fails at once, not after an hour of calls.
  const recorded = await Promise.all(options.threads.map((id) => readRecordedThread(store, id)));
  // And every evaluated slice's agent is resolved: an agent not defined, or no model to answer, fails before any call.
  const agents = new EvalAgents(options);
  const plans = new Map<RecordedSliceView, SlicePlan>();
  for (const rec of recorded)
    for (const slice of rec.slices)
      if (slice.number >= fromSlice && slice.rounds.length > 0)
        plans.set(slice, await agents.plan(rec.record, slice.sliceId, slice.result.agent));
  const run: ThreadRun = { store, opts: options, plans, counters: { calls: 0 } };
  const threads: ThreadEval[] = new Array<ThreadEval>(recorded.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < recorded.length; i = next++) threads[i] = await evaluateThread(run, recorded[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, recorded.length) }, worker));
  const onDivergence = options.onDivergence ?? 'continue';
  const models = [...new Set([...plans.values()].map((p) => p.model.id))];
  return {
    model: options.model?.id ?? models.join(', '),
    ...(options.agent !== undefined && { agent: options.agent }),
    ...(options.recordedModel !== undefined && { recordedModel: options.recordedModel }),
    changedAgents: changedAgents(plans),
    fromSlice,
    onDivergence: typeof onDivergence === 'function' ? 'custom' : onDivergence,
    threads,
    totals: totalsOf(threads, run.counters.calls, options),
  };
}

async function evaluateThread(
  run: ThreadRun,
  rec: Awaited<ReturnType<typeof readRecordedThread>>,
): Promise<ThreadEval> {
  const { store, opts } = run;
  const threadId = rec.record.threadId;
  const out: ThreadEval = { threadId, recordedSlices: rec.slices.length, slices: [], scores: [] };
  const overrides: Override[] = [];
  for (const slice of rec.slices) {
    const plan = run.plans.get(slice);
    if (!plan) continue; // before `fromSlice`, or a rewind's slice
    opts.signal?.throwIfAborted();
    const system = threadSystemPrompt(plan.instructions, threadId, rec.record.rootThreadId);
    const history = await historyBefore(store, rec.chain, slice, overrides);
    const dropped = (it: HistoryItem) => it.kind === 'tool_result' && overrides.some((o) => o.droppedCalls.has(it.id));
    const inputs = slice.inputs.map((s) => s.item).filter((it) => !dropped(it));
    const sliceEval = newSliceEval(slice, plan, opts);
    out.slices.push(sliceEval);
    for (const [r, round] of slice.rounds.entries()) {
      const outputsBefore = slice.outputs.slice(0, round.offset).map((s) => s.item);
      const request = modelRequest(threadId, system, [...history, ...inputs, ...outputsBefore], plan.model, plan.specs);
      const candidate = await runCandidate(plan.model, request, opts.signal);
      run.counters.calls++;
      const view: RoundView = {
        threadId,
        sliceId: slice.sliceId,
        slice: slice.number,
        round: r,
        request,
        recorded: { text: round.text, ...(round.toolCall && { toolCall: choice(round.toolCall) }) },
        candidate,
      };
      const roundEval = await scoreRound(view, opts.scorers ?? []);
      sliceEval.rounds.push(roundEval);
      addRound(sliceEval, candidate);
      if (!roundEval.diverged) continue;
      sliceEval.diverged = true;
      const action = await decide(opts, view);
      if (action === 'stop') {
        sliceEval.resolution = 'stopped';
        out.stoppedAt = { slice: slice.number, round: r };
        break;
      }
      if (action === 'continue') {
        sliceEval.resolution ??= 'teacher-forced';
        continue;
      }
      sliceEval.resolution = 'supplied';
      overrides.push(overrideOf(slice, round, candidate, action.result));
      break; // the rest of the slice answered the recorded call, which is gone
    }
    priceSlice(sliceEval, plan, opts);
    if (out.stoppedAt) break;
  }
  out.scores = await store.evals.scores({ threadId });
  return out;
}

/** The model view as the slice loaded it, with earlier `{ result }` overrides applied to the thread's own items. */
async function historyBefore(
  store: ConversationStore,
  chain: Awaited<ReturnType<typeof readRecordedThread>>['chain'],
  slice: RecordedSliceView,
  overrides: readonly Override[],
): Promise<HistoryItem[]> {
  const threadId = chain[chain.length - 1]!.threadId;
  const asOf = storeAsOf(store, threadId, slice.start);
  const self = recordAsOf(chain[chain.length - 1]!, slice.start);
  const view = await modelView(asOf, [...chain.slice(0, -1), self]);
  if (overrides.length === 0) return view;
  // The view ends with the thread's own items from its summary's end (or from 0), less what rewinds archived:
  // positions map onto its tail.
  const hidden = visibleRanges(self);
  const ownStart = (await asOf.latestSummary(threadId, undefined, hidden))?.upTo ?? 0;
  // Merged once: a thread may hold up to 1,000 archived ranges (issue 38 finding 7), and this runs per position.
  const merged = mergeRanges(hidden);
  const isHidden = (p: number) => coveringRange(merged, p) !== undefined;
  const shown = (from: number, to: number) => {
    let n = 0;
    for (let p = from; p < to; p++) if (!isHidden(p)) n++;
    return n;
  };
  const tailStart = view.length - shown(ownStart, slice.start);
  for (const o of [...overrides].sort((a, b) => b.from - a.from)) {
    // Inside a later summary, or archived by a later rewind: what the record shows there stands.
    if (o.from < ownStart || isHidden(o.from)) continue;
    view.splice(tailStart + shown(ownStart, o.from), shown(o.from, o.to), ...o.items);
  }
  return view.filter((it) => !(it.kind === 'tool_result' && overrides.some((o) => o.droppedCalls.has(it.id))));
}

function overrideOf(
  slice: RecordedSliceView,
  round: RecordedRound,
  candidate: CandidateTurn,
  result: string | ToolResultContent[],
): Override {
  const from = slice.start + slice.inputs.length + round.offset;
  const items: HistoryItem[] = [];
  if (candidate.text !== '') items.push({ kind: 'assistant', text: candidate.text });
  if (candidate.toolCall) {
    const { id, name, args } = candidate.toolCall;
    items.push({ kind: 'tool_call', id, name, args });
    const content: ToolResultContent[] = typeof result === 'string' ? [{ type: 'text', text: result }] : result;
    items.push({ kind: 'tool_result', id, content });
  }
  const droppedCalls = new Set<string>();
  for (const s of slice.outputs.slice(round.offset)) if (s.item.kind === 'tool_call') droppedCalls.add(s.item.id);
  return { from, to: slice.start + slice.inputs.length + slice.outputs.length, items, droppedCalls };
}

const choice = (c: ToolChoice): ToolChoice => ({ name: c.name, args: c.args });

async function scoreRound(view: RoundView, scorers: readonly Scorer[]): Promise<RoundEval> {
  const { recorded, candidate } = view;
  const toolMatch = sameToolChoice(recorded.toolCall, candidate.toolCall);
  const diverged = !toolMatch || candidate.error !== undefined;
  const scores: ScoreValue[] = [];
  for (const scorer of scorers) {
    const s = await scorer(view);
    if (s !== undefined) scores.push(...(Array.isArray(s) ? s : [s]));
  }
  return {
    round: view.round,
    recorded,
    candidate: {
      text: candidate.text,
      ...(candidate.toolCall && { toolCall: choice(candidate.toolCall) }),
      ...(candidate.error !== undefined && { error: candidate.error }),
    },
    toolMatch,
    textSimilarity: textSimilarity(recorded.text, candidate.text),
    ...(candidate.usage && { usage: candidate.usage }),
    latencyMs: candidate.latencyMs,
    diverged,
    ...(diverged && { diff: lineDiff(decisionLines(recorded), decisionLines(candidate)) }),
    scores,
  };
}

async function decide(opts: EvalOptions, d: Divergence): Promise<DivergenceAction> {
  const on = opts.onDivergence ?? 'continue';
  return typeof on === 'function' ? on(d) : on;
}

function newSliceEval(slice: RecordedSliceView, plan: SlicePlan, opts: EvalOptions): SliceEval {
  const { result } = slice;
  const recordedModel = opts.recordedModel ?? plan.recorded?.model;
  const price = recordedModel === undefined ? undefined : priceOf(recordedModel, opts.prices);
  return {
    slice: slice.number,
    sliceId: slice.sliceId,
    agent: {
      name: plan.agent,
      model: plan.model.id,
      ...(plan.recorded && { recorded: plan.recorded }),
      ...(plan.changed && { changed: plan.changed }),
    },
    recorded: {
      ...(result.usage && { usage: result.usage }),
      ...(result.error !== undefined && { error: result.error }),
      interrupted: result.interrupted,
      ...(price && { usd: spendOf(result.usage, price).usd }),
    },
    candidate: { latencyMs: 0 },
    rounds: [],
    diverged: false,
  };
}

function addRound(s: SliceEval, c: CandidateTurn): void {
  s.candidate.latencyMs += c.latencyMs;
  const usage = addUsage(s.candidate.usage, c.usage);
  if (usage) s.candidate.usage = usage;
}

function priceSlice(s: SliceEval, plan: SlicePlan, opts: EvalOptions): void {
  const price = priceOf(plan.model.id, opts.prices);
  if (price) s.candidate.usd = spendOf(s.candidate.usage, price).usd;
}

/** The evaluated slices whose recorded hash their agent's definition no longer has, by agent and recorded hash. */
export function changedAgents(plans: ReadonlyMap<RecordedSliceView, SlicePlan>): ChangedAgent[] {
  const out = new Map<string, ChangedAgent>();
  for (const [slice, plan] of plans) {
    if (!plan.changed || !plan.recorded) continue;
    const key = `${plan.recorded.name}\n${plan.recorded.hash}`;
    const entry = out.get(key) ?? {
      agent: plan.recorded.name,
      recorded: plan.recorded.hash,
      now: plan.changed.now,
      slices: [],
    };
    entry.slices.push(slice.sliceId);
    out.set(key, entry);
  }
  return [...out.values()];
}

function totalsOf(threads: readonly ThreadEval[], providerCalls: number, opts: EvalOptions): EvalTotals {
  const slices = threads.flatMap((t) => t.slices);
  const rounds = slices.flatMap((s) => s.rounds);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const tokens = (u: TokenUsage | undefined) => tokensOf(u).totalTokens;
  const scores: Record<string, { count: number; mean: number }> = {};
  for (const s of rounds.flatMap((r) => r.scores)) {
    const e = (scores[s.name] ??= { count: 0, mean: 0 });
    e.mean = (e.mean * e.count + s.value) / (e.count + 1);
    e.count++;
  }
  // Priced when every evaluated slice is (with none, when the named models are).
  const priced = (id: string | undefined) => id !== undefined && priceOf(id, opts.prices) !== undefined;
  const candidatePriced =
    slices.length > 0 ? slices.every((s) => s.candidate.usd !== undefined) : priced(opts.model?.id);
  const recordedPriced =
    slices.length > 0 ? slices.every((s) => s.recorded.usd !== undefined) : priced(opts.recordedModel);
  return {
    threads: threads.length,
    recordedSlices: sum(threads.map((t) => t.recordedSlices)),
    evaluatedSlices: slices.length,
    evaluatedRounds: rounds.length,
    divergedSlices: slices.filter((s) => s.diverged).length,
    stoppedThreads: threads.filter((t) => t.stoppedAt).length,
    toolMatchRate: rounds.length === 0 ? 1 : rounds.filter((r) => r.toolMatch).length / rounds.length,
    meanTextSimilarity: rounds.length === 0 ? 1 : sum(rounds.map((r) => r.textSimilarity)) / rounds.length,
    providerCalls,
    candidateErrors: rounds.filter((r) => r.candidate.error !== undefined).length,
    candidateTokens: sum(slices.map((s) => tokens(s.candidate.usage))),
    ...(candidatePriced && { candidateUsd: sum(slices.map((s) => s.candidate.usd ?? 0)) }),
    recordedTokens: sum(slices.map((s) => tokens(s.recorded.usage))),
    ...(recordedPriced && { recordedUsd: sum(slices.map((s) => s.recorded.usd ?? 0)) }),
    candidateLatencyMs: sum(slices.map((s) => s.candidate.latencyMs)),
    scores,
  };
}
