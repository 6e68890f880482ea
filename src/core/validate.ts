/**
 * Structural validation of inputs at the two places they enter: the client (throws a typed error) and the
 * workflow's signal handler (drops and counts, because a throwing handler would fail the workflow task).
 */
import { agentNameProblem } from './agents';
import type { InputMessage, ToolResultContent } from './types';
import { stagedInputError } from './staged';
import { inputOfPayload, type KindSignalName } from './readable-input';

/**
 * A failure may carry `lenient`: the value, when only the complete checks (issue 26, release 0.6) refuse it and the
 * checks of release 0.5 took it. The workflow takes it while it replays history recorded before those checks, where it
 * was taken (`workflows/inbox.ts`); everyone else treats it as refused.
 */
export type Validation<T> = { ok: true; value: T } | { ok: false; error: string; lenient?: T };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A plain JSON object: its prototype is a root prototype (Object.prototype of any realm, or none). What a payload
 * decodes to; not a class instance, a Map or a Date, whose own behaviour the runtime would carry into a thread.
 */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (!isObject(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * A value quoted in an error message: primitives as JSON (long strings cut), anything else by its kind. Never a
 * JSON.stringify of an object, which may be nested deep enough to overflow the stack (in a signal handler, that would
 * fail the workflow task on every retry).
 */
function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
  if (typeof v === 'object') return v === null ? 'null' : Array.isArray(v) ? 'an array' : 'an object';
  return typeof v === 'number' || typeof v === 'boolean' || v === undefined ? String(v) : `a ${typeof v}`;
}

function isNonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

function validateResultContent(v: unknown): string | undefined {
  if (!Array.isArray(v)) return 'content.content must be an array';
  for (const [i, block] of (v as unknown[]).entries()) {
    if (!isObject(block)) return `content.content[${i}] must be an object`;
    const b = block as Partial<ToolResultContent> & Record<string, unknown>;
    if (b.type === 'text') {
      if (typeof b.text !== 'string') return `content.content[${i}].text must be a string`;
    } else if (b.type === 'image') {
      if (typeof b.data !== 'string' || typeof b.mediaType !== 'string') {
        return `content.content[${i}] image needs string data and mediaType`;
      }
    } else {
      return `content.content[${i}].type must be 'text' or 'image'`;
    }
  }
  return undefined;
}

/** The checks of release 0.5: the kind of each synthetic input and the fields its handling needs first. */
function validateSyntheticKind(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) return 'synthetic must be an object';
  switch (v.type) {
    case 'subscription_event':
    case 'parent_message':
      return isNonEmptyString(v.toolCallId) ? undefined : `synthetic ${v.type} needs a toolCallId`;
    case 'thread_report':
      return isNonEmptyString(v.toolCallId) && isNonEmptyString(v.childThreadId)
        ? undefined
        : 'synthetic thread_report needs toolCallId and childThreadId';
    case 'compaction':
    case 'compaction_complete':
    case 'migrate':
      // migrate: release 0.12; older code drops it as an unknown type (malformed), and so do 0.12's replays of them.
      return undefined;
    case 'set_agent':
      // Release 0.13 (issue 40): older code drops it as an unknown type (malformed), and so do 0.13's replays of them.
      return agentNameProblem(v.agent) === undefined ? undefined : `synthetic set_agent: ${agentNameProblem(v.agent)}`;
    case 'rewind':
      // Release 0.8: older code drops it as an unknown type (malformed), which is why a rewind needs every worker on 0.8.
      return Number.isSafeInteger(v.to) && (v.to as number) >= 0
        ? undefined
        : 'synthetic rewind needs `to`, a non-negative integer';
    case 'prompt':
      return isNonEmptyString(v.toolCallId) &&
        isObject(v.prompt) &&
        (v.prompt.kind === 'oauth' || v.prompt.kind === 'user_choice')
        ? undefined
        : 'synthetic prompt needs toolCallId and a prompt of kind oauth or user_choice';
    default:
      return `unknown synthetic type ${shown(v.type)}`;
  }
}

/** The checks of release 0.5, unchanged: what history recorded before the complete checks was taken by. */
function validateReleased(v: unknown): Validation<InputMessage> {
  const fail = (error: string): Validation<InputMessage> => ({ ok: false, error });
  if (!isObject(v)) return fail('input must be an object');
  if (!isNonEmptyString(v.id)) return fail('input.id must be a non-empty string');
  if (!isNonEmptyString(v.threadId)) return fail('input.threadId must be a non-empty string');
  const c = v.content;
  if (!isObject(c)) return fail('input.content must be an object');
  if (c.type === 'text') {
    if (typeof c.text !== 'string') return fail('input.content.text must be a string');
  } else if (c.type === 'tool_result') {
    if (!isNonEmptyString(c.toolCallId) && v.synthetic === undefined) {
      return fail('input.content.toolCallId must be a non-empty string');
    }
    const err = validateResultContent(c.content);
    if (err) return fail(`input.${err}`);
  } else {
    return fail(`input.content.type must be 'text' or 'tool_result', got ${shown(c.type)}`);
  }
  const synErr = validateSyntheticKind(v.synthetic);
  if (synErr) return fail(`input.${synErr}`);
  if (v.metadata !== undefined && !isObject(v.metadata)) return fail('input.metadata must be an object');
  if (v.subscription !== undefined && typeof v.subscription !== 'boolean') {
    return fail('input.subscription must be a boolean');
  }
  if (v.displayAs !== undefined && !Array.isArray(v.displayAs)) return fail('input.displayAs must be an array');
  const stagedErr = stagedInputError(v as { content: unknown });
  if (stagedErr) return fail(`input.${stagedErr}`);
  return { ok: true, value: v as unknown as InputMessage };
}

/** Most choices one `user_choice` prompt offers (RAP sets no bound; every status and the UI's details list them). */
export const MAX_PROMPT_CHOICES = 100;

/** An absolute http(s) URL, by its scheme: what a prompt links to (RAP checks the same at the gateway). */
const HTTP_URL = /^https?:\/\/[^\s]/i;

/**
 * The first key of `o` that `allowed` does not name, or undefined. A key whose value is undefined counts as absent (JSON
 * never carries it). Every shape checked with it is the runtime's own: an unknown key is a mistake or an attack, and
 * refusing it keeps keys such as `__proto__`, `constructor` or `toString` out of everything the thread keeps.
 */
function unknownKey(o: Record<string, unknown>, allowed: readonly string[]): string | undefined {
  for (const k of Object.keys(o)) if (o[k] !== undefined && !allowed.includes(k)) return k;
  return undefined;
}

const closed = (o: Record<string, unknown>, allowed: readonly string[], where: string): string | undefined => {
  const k = unknownKey(o, allowed);
  return k === undefined ? undefined : `${where} has an unknown field ${shown(k)}`;
};

/** Why `v` is not a complete {@link PendingPrompt}, or undefined. */
function promptError(p: Record<string, unknown>): string | undefined {
  const at = 'synthetic.prompt';
  if (p.kind === 'oauth') {
    if (typeof p.authUrl !== 'string' || !HTTP_URL.test(p.authUrl)) return `${at}.authUrl must be an http(s) URL`;
    return closed(p, ['kind', 'authUrl'], at);
  }
  // user_choice (the released checks allow no other kind)
  if (!isNonEmptyString(p.id)) return `${at}.id must be a non-empty string`;
  if (typeof p.prompt !== 'string') return `${at}.prompt must be a string`;
  const choices = p.choices;
  if (!Array.isArray(choices) || choices.length === 0 || choices.length > MAX_PROMPT_CHOICES)
    return `${at}.choices must be an array of 1..${MAX_PROMPT_CHOICES} strings`;
  for (let i = 0; i < choices.length; i++)
    if (typeof choices[i] !== 'string') return `${at}.choices[${i}] must be a string`;
  const d = p.default;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d >= choices.length)
    return `${at}.default must be the index of a choice (0..${choices.length - 1})`;
  if (typeof p.responseUrl !== 'string' || !HTTP_URL.test(p.responseUrl))
    return `${at}.responseUrl must be an http(s) URL`;
  return closed(p, ['kind', 'id', 'prompt', 'choices', 'default', 'responseUrl'], at);
}

/** What the complete checks add for a synthetic input the released checks took: every field, and no other. */
function syntheticError(s: Record<string, unknown>, contentType: unknown): string | undefined {
  const at = 'synthetic';
  // An event, a report or a parent's message is the result of an injected call: tool_result content only.
  if (
    (s.type === 'subscription_event' || s.type === 'thread_report' || s.type === 'parent_message') &&
    contentType !== 'tool_result'
  )
    return `${at} ${s.type} needs tool_result content`;
  switch (s.type) {
    case 'subscription_event':
      if (s.associative !== undefined && typeof s.associative !== 'boolean')
        return `${at}.associative must be a boolean`;
      if (s.final !== undefined && typeof s.final !== 'boolean') return `${at}.final must be a boolean`;
      return closed(s, ['type', 'toolCallId', 'associative', 'final'], at);
    case 'thread_report':
      return closed(s, ['type', 'toolCallId', 'childThreadId'], at);
    case 'parent_message':
      return closed(s, ['type', 'toolCallId'], at);
    case 'compaction':
    case 'compaction_complete':
    case 'migrate':
      return closed(s, ['type'], at);
    case 'rewind':
      return closed(s, ['type', 'to'], at);
    case 'set_agent':
      return closed(s, ['type', 'agent'], at);
    default:
      // prompt (the released checks allow no other type)
      return promptError(s.prompt as Record<string, unknown>) ?? closed(s, ['type', 'toolCallId', 'prompt'], at);
  }
}

/** Why `v` is not one of the documented {@link DisplaySegment} shapes, or undefined. */
export function displaySegmentError(v: unknown): string | undefined {
  if (!isObject(v)) return 'must be an object';
  const c = v.content;
  if (v.type === 'text') {
    if (typeof c !== 'string') return 'content must be a string';
  } else if (v.type === 'diff') {
    if (!isObject(c) || typeof c.path !== 'string' || typeof c.patch !== 'string')
      return 'content must be {path, patch} strings';
    const k = unknownKey(c, ['path', 'patch']);
    if (k !== undefined) return `content has an unknown field ${shown(k)}`;
  } else if (v.type === 'image') {
    if (!isObject(c) || typeof c.data !== 'string' || typeof c.mediaType !== 'string')
      return 'content must be {data, mediaType} strings';
    const k = unknownKey(c, ['data', 'mediaType']);
    if (k !== undefined) return `content has an unknown field ${shown(k)}`;
  } else {
    return `type must be 'text', 'diff' or 'image', got ${shown(v.type)}`;
  }
  const k = unknownKey(v, ['type', 'content']);
  return k === undefined ? undefined : `has an unknown field ${shown(k)}`;
}

/** A staged reference (its fields' types are checked by `stagedInputError`) carries no other field. */
const stagedRefKeys = (ref: unknown, at: string): string | undefined =>
  isObject(ref) ? closed(ref, ['id', 'sha256', 'bytes'], at) : undefined;

/** The fields of an {@link InputMessage}; a new one must be added here, or every input that carries it is refused. */
const INPUT_FIELDS = ['id', 'threadId', 'content', 'synthetic', 'metadata', 'subscription', 'displayAs'] as const;

/**
 * What the complete checks add to the released ones, for an input those took: every field of every kind has its
 * documented type, and no shape of the runtime's own carries a field it does not know. Shallow, or bounded by arrays a
 * payload bounds: safe on any input, before the shape limits are checked.
 */
/** A lone UTF-16 surrogate: a string no UTF-8 store can keep as it is (it would come back as U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function completeError(m: InputMessage): string | undefined {
  // Ids are kept in the store and compared for dedup: one the store would rewrite would no longer match itself.
  for (const [name, id] of [
    ['id', m.id],
    ['threadId', m.threadId],
    ['content.toolCallId', m.content.type === 'tool_result' ? m.content.toolCallId : undefined],
  ] as const)
    if (typeof id === 'string' && LONE_SURROGATE.test(id)) return `${name} must be well-formed Unicode`;
  const c = m.content as unknown as Record<string, unknown>;
  if (c.type === 'text') {
    const k = closed(c, ['type', 'text', 'staged'], 'content');
    if (k) return k;
  } else {
    if (typeof c.toolCallId !== 'string') return 'content.toolCallId must be a string';
    const k = closed(c, ['type', 'toolCallId', 'content'], 'content');
    if (k) return k;
    const blocks = c.content as Record<string, unknown>[];
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i]!;
      const at = `content.content[${i}]`;
      const e =
        b.type === 'text'
          ? (closed(b, ['type', 'text', 'staged'], at) ?? stagedRefKeys(b.staged, `${at}.staged`))
          : closed(b, ['type', 'data', 'mediaType'], at);
      if (e) return e;
    }
  }
  if (c.type === 'text') {
    const e = stagedRefKeys(c.staged, 'content.staged');
    if (e) return e;
  }
  if (m.synthetic !== undefined) {
    const e = syntheticError(m.synthetic as unknown as Record<string, unknown>, c.type);
    if (e) return e;
  }
  if (m.metadata !== undefined && !isPlainObject(m.metadata)) return 'metadata must be a plain JSON object';
  const display = (m.displayAs ?? []) as unknown[];
  for (let i = 0; i < display.length; i++) {
    const e = displaySegmentError(display[i]);
    if (e) return `displayAs[${i}] ${e}`;
  }
  return undefined;
}

/**
 * Checks that a value is a well-formed {@link InputMessage}, completely: every field of every kind (synthetic inputs,
 * prompts, display segments included), no unknown fields in the runtime's own shapes. Nothing a thread derives from an
 * input that passes can fail on its shape (issue 26).
 */
export function validateInputMessage(v: unknown): Validation<InputMessage> {
  const released = validateReleased(v);
  if (!released.ok) return released;
  const m = released.value as InputMessage & Record<string, unknown>;
  const unknown = unknownKey(m, INPUT_FIELDS);
  const inner = unknown === undefined ? completeError(m) : undefined;
  const error = unknown !== undefined ? `input has an unknown field ${shown(unknown)}` : inner && `input.${inner}`;
  return error === undefined ? released : { ok: false, error, lenient: released.value };
}

/**
 * What a signal named by its kind (`user_text`, `tool_result`, `event`, `report`, `control`; decision 62) carries: an
 * {@link InputMessage}, or the readable form of its kind (`{text, threadId, id}` for a user text, `{tool?, text,
 * toolCallId, threadId, id}` for a tool result or an event; see `readable-input.ts`), within the shape limits. The
 * `input` signal takes `InputMessage`s only, as it always has: its recorded histories replay unchanged.
 */
export function validateKindSignal(name: KindSignalName, raw: unknown): Validation<InputMessage> {
  const message = inputOfPayload(name, raw);
  const limit = inputLimitViolation(message);
  if (limit) return { ok: false, error: limit };
  const v = validateInputMessage(message);
  // The workflow bundle compiles the object rest that reads a readable payload into assignments, and assigning a
  // `__proto__` key sets the prototype instead: the key would vanish there (and stay in a client's own check). Refused
  // here, on the payload as sent, so both read it alike.
  if (v.ok && isObject(raw) && Object.prototype.hasOwnProperty.call(raw, '__proto__'))
    return { ok: false, error: 'input has an unknown field "__proto__"', lenient: v.value };
  return v;
}

export function isUserText(m: InputMessage): boolean {
  return m.synthetic === undefined && m.content.type === 'text';
}

/**
 * Bounds on an input's shape. JSON.stringify, Temporal's payload converter and the validators recurse over the input,
 * and a few thousand levels of nesting overflow the stack (a raw `RangeError` in the client; worse where it is not
 * caught); a very wide or long structure costs every slice that carries it.
 */
export interface InputShapeLimits {
  /** Deepest nesting of objects and arrays; the input itself is level 1. */
  maxDepth: number;
  /** Most keys of one object, or elements of one array. */
  maxEntries: number;
  /** Most keys and elements in all. */
  maxTotalEntries: number;
  /**
   * Longest string outside the content (metadata, ids, prompts). Content text, image data and display segments are
   * the payload itself: the byte limit bounds them (and large ones are staged).
   */
  maxStringLength: number;
}

/** Deep enough for any real metadata (serde_json's default recursion limit is 128), far from a stack overflow. */
export const DEFAULT_INPUT_LIMITS: Readonly<InputShapeLimits> = Object.freeze({
  maxDepth: 128,
  maxEntries: 10_000,
  maxTotalEntries: 100_000,
  maxStringLength: 64 * 1024,
});

/** One value met by the walk; the parent chain is kept so a path is built only for the value that is refused. */
interface Frame {
  value: unknown;
  depth: number;
  key: string | number | undefined;
  parent: Frame | undefined;
}

const keysOf = (f: Frame): (string | number)[] => {
  const keys: (string | number)[] = [];
  for (let at: Frame | undefined = f; at?.key !== undefined; at = at.parent) keys.push(at.key);
  return keys.reverse();
};

/** Where an input's content lives: `content.text`, `content.content[i].text|data`, `displayAs[i].content(.patch|.data)`. */
function isContentString(keys: readonly (string | number)[]): boolean {
  const [a, b, c, d] = keys;
  if (a === 'content')
    return keys.length === 2
      ? b === 'text'
      : keys.length === 4 && b === 'content' && typeof c === 'number' && (d === 'text' || d === 'data');
  if (a !== 'displayAs' || typeof b !== 'number' || c !== 'content') return false;
  return keys.length === 3 || (keys.length === 4 && (d === 'patch' || d === 'data'));
}

/** `metadata.a[3].b`, shortened in the middle when deep. */
function pathOf(keys: readonly (string | number)[]): string {
  const part = (k: string | number) =>
    typeof k === 'number'
      ? `[${k}]`
      : /^[A-Za-z_$][\w$]{0,39}$/.test(k)
        ? `.${k}`
        : `[${JSON.stringify(k.slice(0, 40))}${k.length > 40 ? '…' : ''}]`;
  const join = (ks: readonly (string | number)[]) => ks.map(part).join('').replace(/^\./, '');
  const path =
    keys.length <= 8 ? join(keys) : `${join(keys.slice(0, 4))}…(${keys.length - 6} more)…${join(keys.slice(-2))}`;
  return path === '' ? 'the input' : path;
}

/**
 * Why `value` (an input message, or `{ metadata }` of a new thread) exceeds the shape limits, or undefined. Walks with
 * an explicit stack, never recursion, so no depth or width overflows it; a cycle ends at `maxDepth`. Pure and
 * deterministic: workflow code may call it.
 */
export function inputLimitViolation(value: unknown, limits: Partial<InputShapeLimits> = {}): string | undefined {
  const l = { ...DEFAULT_INPUT_LIMITS, ...limits };
  const stack: Frame[] = [{ value, depth: 1, key: undefined, parent: undefined }];
  let total = 0;
  while (stack.length > 0) {
    const f = stack.pop()!;
    const v = f.value;
    if (typeof v === 'string') {
      if (v.length > l.maxStringLength && !isContentString(keysOf(f))) {
        return `${pathOf(keysOf(f))} is a string of ${v.length} characters, over the limit of ${l.maxStringLength}`;
      }
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (f.depth > l.maxDepth) return `${pathOf(keysOf(f))} is nested more than ${l.maxDepth} levels deep`;
    const isArray = Array.isArray(v);
    const keys = isArray ? undefined : Object.keys(v);
    const n = isArray ? v.length : keys!.length;
    if (n > l.maxEntries)
      return `${pathOf(keysOf(f))} has ${n} ${isArray ? 'elements' : 'keys'}, over the limit of ${l.maxEntries}`;
    total += n;
    if (total > l.maxTotalEntries) return `the input has more than ${l.maxTotalEntries} keys and elements in all`;
    // Pushed in reverse, so the walk (and the first violation it reports) follows document order.
    for (let i = n - 1; i >= 0; i--) {
      const key = isArray ? i : keys![i]!;
      stack.push({ value: (v as Record<string | number, unknown>)[key], depth: f.depth + 1, key, parent: f });
    }
  }
  return undefined;
}
