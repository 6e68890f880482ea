/**
 * What a follower of a thread showed, one line per item: committed items (`{ history }`) and live events alike, a
 * slice's streamed text joined into its assistant item, an attempt that died before its commit replaced by its retry.
 * A follow that misses or repeats nothing shows exactly the lines of the committed history.
 */
import type { Followed } from '../src/client/follow';
import type { HistoryItem } from '../src/core/types';

/** One line per thing shown: committed items and live events alike, assistant text joined per item. */
export function transcript(steps: readonly Followed[]): string[] {
  const out: string[] = [];
  let text = '';
  const flush = () => {
    if (text) out.push(`assistant: ${text}`);
    text = '';
  };
  /** Where the slice shown live began in `out`, while it has not finished: a retried attempt replaces it. */
  let open: number | undefined;
  for (const s of steps) {
    if (!('history' in s) && s.type === 'status' && s.status === 'running') {
      // A slice's attempt that died before its commit runs again from `running`: as a UI redraws the turn, its
      // lines are replaced.
      if (open !== undefined) out.length = open;
      text = '';
      open = out.length;
      continue;
    }
    if (!('history' in s) && s.type === 'completion_finished') open = undefined;
    if ('history' in s) {
      flush();
      const line = itemLine(s.history);
      if (line) out.push(line);
      continue;
    }
    if (s.type === 'text_delta') {
      text += s.text;
      continue;
    }
    const line =
      s.type === 'tool_call'
        ? `call ${s.id}`
        : s.type === 'tool_result'
          ? `result ${s.toolCallId}: ${s.text}`
          : s.type === 'user_input'
            ? `user: ${s.text}`
            : s.type === 'event'
              ? `event ${s.toolCallId}: ${s.text}`
              : undefined;
    if (line !== undefined || s.type === 'completion_finished') flush();
    if (line !== undefined) out.push(line);
  }
  flush();
  return out;
}

export function itemLine(item: HistoryItem): string | undefined {
  switch (item.kind) {
    case 'user':
      return `user: ${item.text}`;
    case 'assistant':
      return `assistant: ${item.text}`;
    case 'tool_call':
      return `call ${item.id}`;
    case 'tool_result':
      return `result ${item.id}: ${item.content.map((c) => (c.type === 'text' ? c.text : '')).join('')}`;
    case 'subscription_event':
      return `event ${item.toolCallId}: ${item.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')}`;
    default:
      return undefined;
  }
}
