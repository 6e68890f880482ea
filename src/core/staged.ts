/**
 * Large inputs travel by reference. Their content is staged in the conversation store, and the signal carries a small
 * staged form instead: a preview (so the workflow's titles, summaries and the Temporal UI still read well) and a
 * {@link StagedRef} — id, SHA-256 and byte count. The slice loads and verifies the content and puts it back before it
 * commits (`src/activities/staged-inputs.ts`), so history holds exactly what was sent.
 *
 * The two staged forms:
 * - user text `{ type: 'text', text: <preview>, staged }`; the blob is the text as UTF-8.
 * - a tool result or event whose `content` is `[{ type: 'text', text: <preview>, staged }]`, without `displayAs`; the
 *   blob is the UTF-8 JSON of a {@link StagedContent}: the original blocks and display segments.
 *
 * Pure and deterministic: the workflow validates staged forms with it.
 */
import type { DisplaySegment, InputMessage, StagedRef, ToolResultContent } from './types';

/** Characters of the original text a staged form keeps in view. */
export const PREVIEW_CHARS = 200;

/** Characters of an oversized output the model is shown in the error result that replaces it. */
export const OVERSIZE_HEAD_CHARS = 4096;

/** What a staged tool result or event keeps in the store. */
export interface StagedContent {
  content: ToolResultContent[];
  displayAs?: DisplaySegment[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why a value is not a well-formed {@link StagedRef}, or undefined. */
export function stagedRefError(v: unknown): string | undefined {
  if (!isObject(v)) return 'must be an object';
  if (typeof v.id !== 'string' || v.id.length === 0 || v.id.length > 128)
    return 'id must be a string of 1..128 characters';
  if (typeof v.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(v.sha256)) return 'sha256 must be 64 lowercase hex digits';
  if (!Number.isSafeInteger(v.bytes) || (v.bytes as number) < 0) return 'bytes must be a non-negative integer';
  return undefined;
}

/**
 * Checks the staged references of an input that is otherwise well-formed (see `validateInputMessage`): where a
 * `staged` field appears, it must be a proper reference.
 */
export function stagedInputError(input: { content: unknown }): string | undefined {
  const c = input.content as { type?: unknown; staged?: unknown; content?: unknown };
  if (c.type === 'text' && c.staged !== undefined) {
    const err = stagedRefError(c.staged);
    return err && `content.staged ${err}`;
  }
  if (c.type === 'tool_result' && Array.isArray(c.content)) {
    for (const [i, block] of (c.content as { type?: unknown; staged?: unknown }[]).entries()) {
      if (block.type !== 'text' || block.staged === undefined) continue;
      const err = stagedRefError(block.staged);
      if (err) return `content.content[${i}].staged ${err}`;
    }
  }
  return undefined;
}

/** Does the input carry a staged reference? */
export function isStaged(input: InputMessage): boolean {
  const c = input.content;
  return c.type === 'text'
    ? c.staged !== undefined
    : c.content.some((b) => b.type === 'text' && b.staged !== undefined);
}

/** The start of a text, never ending in half a surrogate pair (it would serialize as an unpaired escape). */
function cut(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const end = text.charCodeAt(chars - 1) >= 0xd800 && text.charCodeAt(chars - 1) <= 0xdbff ? chars - 1 : chars;
  return text.slice(0, end);
}

/** The preview of a staged user text: its first {@link PREVIEW_CHARS} characters. */
export const textPreview = (text: string): string => cut(text, PREVIEW_CHARS);

/** Tool output as the model would read it, up to `chars` characters: texts, and a placeholder per image. */
export function contentHead(content: readonly ToolResultContent[], chars: number): string {
  let out = '';
  for (const block of content) {
    if (out.length >= chars) break;
    const piece =
      block.type === 'text' ? block.text : `[image ${block.mediaType}, ${block.data.length} base64 characters]`;
    out += (out ? '\n' : '') + piece.slice(0, chars - out.length + 1);
  }
  return cut(out, chars);
}

/** What to stage for an input: the user text itself, or the JSON of its content and display segments. */
export function stagedPayload(input: InputMessage): string {
  if (input.content.type === 'text') return input.content.text;
  const staged: StagedContent = { content: input.content.content };
  if (input.displayAs) staged.displayAs = input.displayAs;
  return JSON.stringify(staged);
}

/** The staged form of an input whose {@link stagedPayload} the store holds under `ref`. */
export function stagedForm(input: InputMessage, ref: StagedRef): InputMessage {
  const { displayAs: _shown, ...rest } = input;
  const c = input.content;
  if (c.type === 'text') return { ...rest, content: { type: 'text', text: textPreview(c.text), staged: ref } };
  const preview = contentHead(c.content, PREVIEW_CHARS);
  return {
    ...rest,
    content: { type: 'tool_result', toolCallId: c.toolCallId, content: [{ type: 'text', text: preview, staged: ref }] },
  };
}

/** The error text that replaces an output over the limit: the model learns the size, the limit, and how it began. */
export function oversizeText(bytes: number, limit: number, head: string): string {
  const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  const start = head ? `Its first ${head.length} characters:\n\n${head}` : 'It holds no text.';
  return `Error: the tool's output was not delivered: it is ${bytes} bytes (${mib(bytes)}), over the limit of ${limit} bytes (${mib(limit)}) for one input. ${start}`;
}

/**
 * The input that answers in place of a tool result or event over the limit: the same id, thread, call and flags, with
 * an error text instead of the content. Undefined for user text: a person is there to hear the error.
 */
export function oversizeInput(input: InputMessage, bytes: number, limit: number): InputMessage | undefined {
  const c = input.content;
  if (c.type !== 'tool_result') return undefined;
  const { displayAs: _dropped, ...rest } = input;
  const text = oversizeText(bytes, limit, contentHead(c.content, OVERSIZE_HEAD_CHARS));
  return { ...rest, content: { type: 'tool_result', toolCallId: c.toolCallId, content: [{ type: 'text', text }] } };
}
