/**
 * What a slice did, in words, for the Temporal UI (issue 17 §2): its tool calls with their arguments, shortened, and
 * its reply, bounded. The activity computes them from what it commits; the workflow shows them in the next slice's
 * summary and the thread's current details. Pure.
 */
import { shortLine } from './title';
import type { StoredItem } from './types';

/** How much of the last reply a slice result carries: the UI's current details show it whole up to this. */
export const LAST_REPLY_MAX_CHARS = 2000;
/** Calls named per slice, and the length of each one's line. */
const MAX_CALLS = 5;
const CALL_CHARS = 120;

/** `get_build_status {"build_id":"42"}` for each tool call among `items`, at most five. */
export function callLines(items: readonly StoredItem[]): string[] {
  const calls = items.flatMap(({ item }) =>
    item.kind === 'tool_call' ? [shortLine(`${item.name} ${argsText(item.args)}`, CALL_CHARS)] : [],
  );
  return calls.slice(-MAX_CALLS);
}

/** The last reply, whole up to {@link LAST_REPLY_MAX_CHARS}, then cut with an ellipsis. */
export function boundedReply(text: string): string {
  return text.length > LAST_REPLY_MAX_CHARS ? `${text.slice(0, LAST_REPLY_MAX_CHARS - 1)}…` : text;
}

function argsText(args: unknown): string {
  try {
    return JSON.stringify(args) ?? '';
  } catch {
    return '';
  }
}
