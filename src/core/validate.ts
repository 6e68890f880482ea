/**
 * Structural validation of inputs at the two places they enter: the client (throws a typed error) and the
 * workflow's signal handler (drops and counts, because a throwing handler would fail the workflow task).
 */
import type { InputMessage, ToolResultContent } from './types';
import { stagedInputError } from './staged';
import { inputOfPayload, type KindSignalName } from './readable-input';

export type Validation<T> = { ok: true; value: T } | { ok: false; error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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

function validateSynthetic(v: unknown): string | undefined {
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
      return undefined;
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

/** Checks that a value is a well-formed {@link InputMessage}. */
export function validateInputMessage(v: unknown): Validation<InputMessage> {
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
  const synErr = validateSynthetic(v.synthetic);
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

/**
 * What a signal named by its kind (`user_text`, `tool_result`, `event`, `report`, `control`; decision 62) carries: an
 * {@link InputMessage}, or the readable form of its kind (`{text, threadId, id}` for a user text, `{tool?, text,
 * toolCallId, threadId, id}` for a tool result or an event; see `readable-input.ts`), within the shape limits. The
 * `input` signal takes `InputMessage`s only, as it always has: its recorded histories replay unchanged.
 */
export function validateKindSignal(name: KindSignalName, raw: unknown): Validation<InputMessage> {
  const message = inputOfPayload(name, raw);
  const limit = inputLimitViolation(message);
  return limit ? { ok: false, error: limit } : validateInputMessage(message);
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
