/**
 * Structural validation of inputs at the two places they enter: the client (throws a typed error) and the
 * workflow's signal handler (drops and counts, because a throwing handler would fail the workflow task).
 */
import type { InputMessage, ToolResultContent } from './types';

export type Validation<T> = { ok: true; value: T } | { ok: false; error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
      return isNonEmptyString(v.toolCallId) && isObject(v.prompt) && (v.prompt.kind === 'oauth' || v.prompt.kind === 'user_choice')
        ? undefined
        : 'synthetic prompt needs toolCallId and a prompt of kind oauth or user_choice';
    default:
      return `unknown synthetic type ${JSON.stringify(v.type)}`;
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
    return fail(`input.content.type must be 'text' or 'tool_result', got ${JSON.stringify(c.type)}`);
  }
  const synErr = validateSynthetic(v.synthetic);
  if (synErr) return fail(`input.${synErr}`);
  if (v.metadata !== undefined && !isObject(v.metadata)) return fail('input.metadata must be an object');
  if (v.subscription !== undefined && typeof v.subscription !== 'boolean') {
    return fail('input.subscription must be a boolean');
  }
  if (v.displayAs !== undefined && !Array.isArray(v.displayAs)) return fail('input.displayAs must be an array');
  return { ok: true, value: v as unknown as InputMessage };
}

export function isUserText(m: InputMessage): boolean {
  return m.synthetic === undefined && m.content.type === 'text';
}
