/**
 * Scorers: functions the user passes to `evaluateThreads` that score each evaluated round (docs/evals.md, "Scorers").
 * Two ship here — an exact tool match and a JSON-schema check of the candidate's arguments; an LLM judge is a scorer
 * the user writes, calling a model of their choice (the docs show one).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { ModelRequest } from '../model/provider';
import type { CandidateTurn } from './candidate';
import { sameToolChoice } from './compare';
import type { ToolChoice } from './recorded';

/** What a scorer sees of one evaluated round. */
export interface RoundView {
  threadId: string;
  sliceId: string;
  /** The slice's number (see `RecordedSliceView.number`). */
  slice: number;
  /** The model round within the slice, from 0. */
  round: number;
  /** The request both the recorded model and the candidate answered. */
  request: ModelRequest;
  recorded: { text: string; toolCall?: ToolChoice };
  candidate: CandidateTurn;
}

/** One score of a round. */
export interface ScoreValue {
  name: string;
  /** Any finite number; the shipped scorers give 1 (good) or 0. */
  value: number;
  /** Whether the round passes by this scorer, if it says. */
  pass?: boolean;
  detail?: string;
}

/** Returns nothing when it has nothing to say about a round (a schema check of a round without a tool call). */
export type Scorer = (
  round: RoundView,
) => ScoreValue | ScoreValue[] | undefined | Promise<ScoreValue | ScoreValue[] | undefined>;

/**
 * 1 when the candidate chose the recorded tool with the same arguments (key order ignored), or neither called a tool.
 * @example evaluateThreads(store, { threads, model, scorers: [exactToolMatch()] })
 */
export function exactToolMatch(name = 'exact_tool_match'): Scorer {
  return ({ recorded, candidate }) => {
    const pass = sameToolChoice(recorded.toolCall, candidate.toolCall);
    return { name, value: pass ? 1 : 0, pass };
  };
}

export interface JsonSchemaCheckOptions {
  /** Schemas by tool name; a tool not named here is checked against its `parameters` in the request. @default {} */
  schemas?: Readonly<Record<string, Record<string, unknown>>>;
  /** @default 'json_schema' */
  name?: string;
}

/**
 * Checks the candidate's tool arguments against a JSON Schema: the tool's own (as the request offered it) unless
 * `schemas` names another. 1 valid, 0 invalid or a tool the request did not offer; no score for a round without a call.
 * @example jsonSchemaCheck({ schemas: { deploy: { type: 'object', required: ['env'] } } })
 */
export function jsonSchemaCheck(options: JsonSchemaCheckOptions = {}): Scorer {
  const name = options.name ?? 'json_schema';
  const ajv = new Ajv({ allErrors: true, strict: false });
  const compiled = new Map<string, ValidateFunction>();
  // Compiled once per schema object: a thousand threads offer the same tools.
  const validator = (schema: Record<string, unknown>, key: string) => {
    let v = compiled.get(key);
    if (!v) compiled.set(key, (v = ajv.compile(schema)));
    return v;
  };
  return ({ request, candidate }) => {
    const call = candidate.toolCall;
    if (!call) return undefined;
    const own = options.schemas?.[call.name];
    const offered = request.tools.find((t) => t.name === call.name);
    if (!own && !offered) return { name, value: 0, pass: false, detail: `tool ${call.name} was not offered` };
    const validate = own
      ? validator(own, `own:${call.name}`)
      : validator(offered!.parameters, `offered:${call.name}:${JSON.stringify(offered!.parameters)}`);
    const pass = validate(call.args) === true;
    return {
      name,
      value: pass ? 1 : 0,
      pass,
      ...(!pass && { detail: ajv.errorsText(validate.errors) }),
    };
  };
}
