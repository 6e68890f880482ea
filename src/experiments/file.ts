/**
 * Interleaving experiment files (issue 29 §2, docs/experiments.md): JSON naming a base conversation (recorded first, or
 * an existing thread and point), a timeline each variant runs on its fork of the base, the events to deliver at one of
 * the timeline's slots, and the factors to vary (arrival order, timing, count, processing mode). JSON only: the package
 * has no YAML parser, and one was not added for this.
 */
import type { ForkAt } from '../client/fork';
import { defineTool, type JsonSchemaObject, type Tool } from '../tools/tool';
import { checkClasses } from './classes';
import { ExperimentFileError } from './errors';

export { ExperimentFileError };

/** An action of a base or timeline: a user text, or the result of the pending call of a tool (root or child). */
export type ExperimentStep =
  | { send: string }
  /**
   * Answers the pending call of tool `answer` of the variant's thread with `text` (`subscription: true` makes it a
   * subscription, whose events the experiment may deliver).
   */
  | { answer: string; text: string; subscription?: boolean }
  /** Where the events go when the variant's `timing` is this slot's name. */
  | { slot: string };

/** One event to deliver: a subscription event, or the answer to a child's pending call (the child then reports). */
export interface ExperimentEvent {
  /** Names the event in tables (order levels are label sequences). */
  label: string;
  text: string;
}

export interface ExperimentFile {
  name: string;
  description?: string;
  /** Tools the model is offered. None runs: the experiment answers their calls (`answer` steps). */
  tools: { name: string; description?: string; parameters?: JsonSchemaObject }[];
  /** Recorded first on a new thread (each step run to rest), or an existing thread forked at `at` (default now). */
  base: { steps: ExperimentStep[] } | { thread: string; at?: ForkAt };
  /** What every variant runs on its fork of the base, with one or more slots for the events. */
  timeline: ExperimentStep[];
  events: {
    /**
     * `subscription`: events of the subscription a timeline `answer` step with `subscription: true` started for the
     * tool named `on`. `child`: each event answers the pending `on` call of the next child of the variant's thread,
     * whose report then reaches the thread.
     */
    kind: 'subscription' | 'child';
    on: string;
    items: ExperimentEvent[];
  };
  factors: {
    /** Arrival orders: every permutation of the items, up to `permutations`; or `sample` of them, seeded. @default the file's order */
    order?: { permutations: number } | { sample: number; seed?: number };
    /** Slot names of the timeline. @default the first slot */
    timing?: string[];
    /** How many of the ordered events are delivered. @default all */
    count?: number[];
    /** Subscription events only: associative (inline) or threaded (an event child). @default ['associative'] */
    mode?: ('associative' | 'threaded')[];
  };
  /** How a final text is classed: first matching pattern (case-insensitive) names it, else `other`. @default none */
  classes?: Record<string, string>;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isStringArray = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');

function checkStep(s: unknown, at: string): ExperimentStep {
  const bad = (why: string) => new ExperimentFileError(`${at}: ${why}`);
  if (!isObject(s)) throw bad('a step is an object: {send}, {answer, text} or {slot}');
  if (typeof s.send === 'string') return { send: s.send };
  if (typeof s.slot === 'string') return { slot: s.slot };
  if (typeof s.answer === 'string') {
    if (typeof s.text !== 'string') throw bad('an answer step needs its text');
    if (s.subscription !== undefined && typeof s.subscription !== 'boolean') throw bad('subscription is true or false');
    return { answer: s.answer, text: s.text, ...(s.subscription === true && { subscription: true }) };
  }
  throw bad('a step is {send}, {answer, text} or {slot}');
}

/**
 * An experiment's name: it starts the runs' thread ids and names the CLI's temporary folder (`experiment-<name>-…`), so
 * it is a slug — no `/`, `\\` or `..` can take that folder elsewhere (issue 38, finding 9b).
 */
const MAX_NAME_LENGTH = 64;
const EXPERIMENT_NAME = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${MAX_NAME_LENGTH - 1}}$`);

const wholeNumbers = (x: unknown, min: number): x is number[] =>
  Array.isArray(x) && x.length > 0 && x.every((n) => Number.isInteger(n) && (n as number) >= min);

/**
 * Checks a parsed experiment file; `source` names it in errors.
 * @throws ExperimentFileError naming the field that is wrong
 * @example const exp = parseExperiment(JSON.parse(readFileSync(file, 'utf8')), file)
 */
export function parseExperiment(value: unknown, source: string): ExperimentFile {
  const bad = (why: string) => new ExperimentFileError(`${source}: ${why}`);
  if (!isObject(value)) throw bad('not a JSON object');
  if (typeof value.name !== 'string' || value.name === '') throw bad('name is required');
  if (!EXPERIMENT_NAME.test(value.name))
    throw bad(
      `name must be 1 to ${MAX_NAME_LENGTH} letters, digits, '.', '_' or '-', starting with a letter or digit ` +
        `(it names the runs' threads and the command's temporary folder), got ${JSON.stringify(value.name.slice(0, 80))}`,
    );
  if (
    !Array.isArray(value.tools) ||
    !value.tools.every(
      (t) =>
        isObject(t) &&
        typeof t.name === 'string' &&
        (t.description === undefined || typeof t.description === 'string') &&
        (t.parameters === undefined || (isObject(t.parameters) && t.parameters.type === 'object')),
    )
  )
    throw bad('tools must be a list of {name, description?, parameters?: a JSON Schema of type object}');
  if (!isObject(value.base)) throw bad('base is {steps: [...]} or {thread, at}');
  const base = value.base;
  if (!(Array.isArray(base.steps) || typeof base.thread === 'string'))
    throw bad('base is {steps: [...]} or {thread, at}');
  if (Array.isArray(base.steps)) base.steps.forEach((s, i) => checkStep(s, `${source}: base.steps[${i}]`));
  if (!Array.isArray(value.timeline)) throw bad('timeline must be a list of steps');
  const timeline = value.timeline.map((s, i) => checkStep(s, `${source}: timeline[${i}]`));
  const slots = timeline.flatMap((s) => ('slot' in s ? [s.slot] : []));
  if (slots.length === 0) throw bad('the timeline needs at least one {slot} for the events');
  const ev = value.events;
  if (!isObject(ev) || (ev.kind !== 'subscription' && ev.kind !== 'child') || typeof ev.on !== 'string')
    throw bad("events needs kind ('subscription' or 'child') and on (a tool name)");
  if (
    !Array.isArray(ev.items) ||
    ev.items.length === 0 ||
    !ev.items.every((e) => isObject(e) && typeof e.label === 'string' && typeof e.text === 'string')
  )
    throw bad('events.items must be a non-empty list of {label, text}');
  const labels = (ev.items as ExperimentEvent[]).map((e) => e.label);
  if (new Set(labels).size !== labels.length) throw bad('event labels must differ');
  const f = value.factors ?? {};
  if (!isObject(f)) throw bad('factors must be an object');
  if (f.order !== undefined) {
    const o = f.order;
    const ok =
      isObject(o) &&
      ((Number.isInteger(o.permutations) && (o.permutations as number) >= 1) ||
        (Number.isInteger(o.sample) &&
          (o.sample as number) >= 1 &&
          (o.seed === undefined || Number.isInteger(o.seed))));
    if (!ok) throw bad('factors.order is {permutations: n} or {sample: n, seed?}');
  }
  if (
    f.timing !== undefined &&
    !(isStringArray(f.timing) && f.timing.length > 0 && f.timing.every((t) => slots.includes(t)))
  )
    throw bad(`factors.timing must name slots of the timeline (${slots.join(', ')})`);
  if (f.count !== undefined && !(wholeNumbers(f.count, 1) && f.count.every((c) => c <= labels.length)))
    throw bad(`factors.count must be whole numbers from 1 to ${labels.length}`);
  if (f.mode !== undefined) {
    if (!(isStringArray(f.mode) && f.mode.length > 0 && f.mode.every((m) => m === 'associative' || m === 'threaded')))
      throw bad("factors.mode is a list of 'associative' and 'threaded'");
    if (ev.kind !== 'subscription') throw bad('factors.mode applies to subscription events only');
  }
  if (value.classes !== undefined) checkClasses(value.classes, bad, MAX_NAME_LENGTH);
  // Without `factors`, every factor at its default (variantsOf reads the object).
  return { ...value, factors: f } as unknown as ExperimentFile;
}

/**
 * The experiment's tools, for the worker: async tools that do nothing — the experiment answers their calls when its
 * timeline says (`answer` steps), so nothing runs and every variant sees the same results.
 */
export function experimentTools(exp: ExperimentFile): Tool[] {
  return exp.tools.map((t) =>
    defineTool({
      name: t.name,
      description: t.description ?? t.name,
      parameters: t.parameters ?? { type: 'object', properties: {} },
      execute: () => undefined,
    }),
  );
}
