/**
 * Inputs as the Temporal UI shows them (issue 17 §2): one signal name per kind of input, and a payload whose first key
 * is what a person reads — the text, the tool's name — instead of the message's UUID. Pure: the client writes these
 * payloads, the workflow reads them back (decision 62).
 */
import type { InputMessage, ToolResultContent } from './types';

/** The signal names that feed a thread's inbox; `input` takes any {@link InputMessage} and always will. */
export const KIND_SIGNAL_NAMES = ['user_text', 'tool_result', 'event', 'report', 'control'] as const;
export type KindSignalName = (typeof KIND_SIGNAL_NAMES)[number];
export type InputSignalName = 'input' | KindSignalName;

/** The signal name of a message's kind. */
export function signalNameOf(m: InputMessage): KindSignalName {
  switch (m.synthetic?.type) {
    case undefined:
      return m.content.type === 'text' ? 'user_text' : 'tool_result';
    case 'subscription_event':
      return 'event';
    case 'thread_report':
    case 'parent_message':
      return 'report';
    default:
      return 'control';
  }
}

/**
 * The readable form of a message, as a signal of {@link signalNameOf} carries it. A user text is
 * `{text, threadId, id, metadata?}`; a tool result `{tool?, text | content, toolCallId, threadId, id, ...}`; an event
 * the same with `associative`/`final`; a report `{text, childThreadId | fromParent: true, toolCallId, threadId, id}`.
 * Anything else (control inputs, staged content, several content blocks) stays an `InputMessage`, content first. `tool` names the tool for the reader only; the thread knows its calls.
 */
export function readablePayload(m: InputMessage, toolName?: string): Record<string, unknown> {
  // The readable form is a view, not a second format: it is sent only when reading it back gives the very message
  // (issue 25). Anything it cannot carry — a staged reference, an extra field, a block of another shape — makes the
  // message travel whole, so no field is ever lost on the way, whatever the next change to either side forgets.
  const readable = readableCandidate(m, toolName);
  const name = signalNameOf(m);
  if (readable !== undefined && sameJson(normalized(inputOfPayload(name, readable)), normalized(m))) return readable;
  return wholeMessage(m);
}

/** The message itself, its readable fields first (the text before its type, the result before its call id). */
function wholeMessage(m: InputMessage): Record<string, unknown> {
  const c = m.content;
  // A key keeps the place it was first given, whatever a later spread writes into it.
  const content: object =
    c.type === 'text' ? Object.assign({ text: c.text }, c) : Object.assign({ content: c.content }, c);
  const lead: Record<string, unknown> = { content };
  if (m.synthetic !== undefined) lead.synthetic = m.synthetic;
  return Object.assign(lead, m, { content });
}

/**
 * Equal as JSON values (what a payload carries): the same keys with equal values, in any order; a key whose value is
 * undefined is absent. Iterative, so no nesting overflows it.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const ys = y as unknown[];
      if (x.length !== ys.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], ys[i]]);
      continue;
    }
    const xo = x as Record<string, unknown>;
    const yo = y as Record<string, unknown>;
    const xk = Object.keys(xo).filter((k) => xo[k] !== undefined);
    const yk = Object.keys(yo).filter((k) => yo[k] !== undefined);
    if (xk.length !== yk.length) return false;
    for (const k of xk) {
      if (!Object.prototype.hasOwnProperty.call(yo, k)) return false;
      stack.push([xo[k], yo[k]]);
    }
  }
  return true;
}

/**
 * A message as the thread reads it: an event's `associative` and `final` are false when absent, so the readable form,
 * which always names them, reads back as the same message.
 */
function normalized(v: unknown): unknown {
  if (!isObject(v) || !isObject(v.synthetic) || v.synthetic.type !== 'subscription_event') return v;
  const syn = v.synthetic;
  return { ...v, synthetic: { ...syn, associative: syn.associative ?? false, final: syn.final ?? false } };
}

/** The readable form of a message of a common shape, or undefined for any other shape. */
function readableCandidate(m: InputMessage, toolName?: string): Record<string, unknown> | undefined {
  const c = m.content;
  const rest = {
    threadId: m.threadId,
    id: m.id,
    ...(m.metadata !== undefined && { metadata: m.metadata }),
    ...(m.subscription !== undefined && { subscription: m.subscription }),
    ...(m.displayAs !== undefined && { displayAs: m.displayAs }),
  };
  const syn = m.synthetic;
  if (c.type === 'text' && syn === undefined && c.staged === undefined) return { text: c.text, ...rest };
  if (
    c.type === 'tool_result' &&
    (syn === undefined || (syn.type === 'subscription_event' && syn.toolCallId === c.toolCallId))
  ) {
    const only = c.content.length === 1 && c.content[0]!.type === 'text' ? c.content[0]!.text : undefined;
    return {
      ...(toolName !== undefined && { tool: toolName }),
      ...(only !== undefined ? { text: only } : { content: c.content }),
      toolCallId: c.toolCallId,
      ...rest,
      ...(syn !== undefined && { associative: syn.associative ?? false, final: syn.final ?? false }),
    };
  }
  // A report or a parent's message: its text first, then who it is from.
  if (
    c.type === 'tool_result' &&
    (syn?.type === 'thread_report' || syn?.type === 'parent_message') &&
    syn.toolCallId === c.toolCallId
  ) {
    const only = c.content.length === 1 && c.content[0]!.type === 'text' ? c.content[0]!.text : undefined;
    if (only !== undefined) {
      const from = syn.type === 'thread_report' ? { childThreadId: syn.childThreadId } : { fromParent: true };
      return { text: only, ...from, toolCallId: c.toolCallId, ...rest };
    }
  }
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The {@link InputMessage} a signal of `name` carries: a payload with a `content` object is one already; otherwise the
 * readable form of its kind is turned back into one. Shallow (picks top-level fields only), so it is safe on any input
 * before the shape limits are checked; the result still needs `validateInputMessage`.
 */
export function inputOfPayload(name: KindSignalName, raw: unknown): unknown {
  if (!isObject(raw) || isObject(raw.content)) return raw;
  const { text, content, tool: _tool, toolCallId, associative, final, childThreadId, fromParent, ...rest } = raw;
  if (name === 'user_text') return { ...rest, content: { type: 'text', text } };
  if (name === 'report') {
    const synthetic =
      fromParent === true
        ? { type: 'parent_message', toolCallId }
        : { type: 'thread_report', toolCallId, childThreadId };
    return { ...rest, content: { type: 'tool_result', toolCallId, content: [{ type: 'text', text }] }, synthetic };
  }
  if (name !== 'tool_result' && name !== 'event') return raw;
  const blocks: unknown =
    content ?? (typeof text === 'string' ? [{ type: 'text', text } satisfies ToolResultContent] : undefined);
  const message: Record<string, unknown> = { ...rest, content: { type: 'tool_result', toolCallId, content: blocks } };
  if (name === 'event')
    message.synthetic = {
      type: 'subscription_event',
      toolCallId,
      associative: associative === true,
      final: final === true,
    };
  return message;
}
