/**
 * Byte bounds on what a thread keeps and sends (issue 38 §2): what a run carries across continue-as-new, what its
 * queries and updates answer, the ids an input may have where a client, the CLI or the gateway takes it, and the
 * prompts a pending call may show. Temporal refuses a payload over 2 MB by failing the workflow task, again at every
 * retry; a thread that would pass a bound sheds the oldest of what it can shed, or refuses, and says so. Pure: the
 * workflow, the client and the gateway use it.
 */

/**
 * Characters an input id or call id may have (Temporal's own bound on a workflow id) where the runtime's entry points take it (client, CLI, RAP
 * gateway). A raw signal may still bring ids up to the input checks' string limit (64 KiB): the thread's state sheds
 * those by bytes instead (below).
 */
export const MAX_ID_CHARS = 1000;

/** UTF-8 bytes of the next run's whole arguments at most: a run whose state would be larger does not continue. */
export const CARRIED_MAX_BYTES = 1536 * 1024;

/** UTF-8 bytes of each carried id window (inputs, tool calls, rewound calls) at most; the newest ids are kept. */
export const ID_WINDOW_MAX_BYTES = 256 * 1024;

/** Prompts one pending call shows at most (the newest are kept). */
export const PROMPTS_PER_CALL = 16;

/** UTF-8 bytes of one prompt as JSON at most: a larger one is dropped as malformed. */
export const PROMPT_MAX_BYTES = 32 * 1024;

/** UTF-8 bytes of all prompts as JSON at most (the oldest go first). */
export const PROMPTS_MAX_BYTES = 128 * 1024;

/** Characters of a carried or shown text (the last reply, the last error, a set-aside batch's reason) at most. */
export const TEXT_MAX_CHARS = 2000;

/** Message ids a set-aside batch names at most (the rest are counted, not named). */
export const SET_ASIDE_IDS = 100;

/** UTF-8 bytes of a `status` answer (the query, `waitForIdle`'s result) at most. */
export const STATUS_MAX_BYTES = 512 * 1024;

/** UTF-8 bytes of a string, counted without allocating (lone surrogates count as the 3 bytes of U+FFFD). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i += 1;
    } else n += 3;
  }
  return n;
}

/**
 * UTF-8 bytes of a value's JSON (what Temporal's default converter sends); a value too large to serialize at all (a
 * string past V8's limit) counts as the largest safe integer.
 */
export function jsonBytes(v: unknown): number {
  try {
    return utf8Bytes(JSON.stringify(v) ?? '');
  } catch {
    return Number.MAX_SAFE_INTEGER;
  }
}

/**
 * The newest of `xs` (the end of the array) that fit both bounds: at most `n` of them, at most `maxBytes` in all as
 * JSON. Order is kept.
 */
export function newestWithin<T>(xs: readonly T[], n: number, maxBytes: number): T[] {
  let bytes = 0;
  let i = xs.length;
  while (i > 0 && xs.length - i < n) {
    const size = jsonBytes(xs[i - 1]) + 1;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i -= 1;
  }
  return xs.slice(i);
}

/** A string cut to `max` characters, marked when cut. */
export function clipped(s: string, max: number = TEXT_MAX_CHARS): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/**
 * Where an input names an id longer than {@link MAX_ID_CHARS} (its own id, its thread, the call it answers, the child
 * it comes from), an error saying so; else undefined. The client, the CLI and the RAP gateway refuse such an input.
 */
export function longIdError(m: {
  id: string;
  threadId: string;
  content: { type: string; toolCallId?: string };
  synthetic?: { type: string; toolCallId?: string; childThreadId?: string };
}): string | undefined {
  const ids: [string, string | undefined][] = [
    ['id', m.id],
    ['threadId', m.threadId],
    ['content.toolCallId', m.content.toolCallId],
    ['synthetic.toolCallId', m.synthetic?.toolCallId],
    ['synthetic.childThreadId', m.synthetic?.childThreadId],
  ];
  for (const [at, id] of ids)
    if (typeof id === 'string' && id.length > MAX_ID_CHARS)
      return `${at} has ${id.length} characters, over the limit of ${MAX_ID_CHARS}`;
  return undefined;
}
