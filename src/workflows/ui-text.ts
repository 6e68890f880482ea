/**
 * What the Temporal UI shows of a thread: one-line activity summaries that read like the conversation, and a title.
 * Pure and deterministic (workflow code).
 */
import { INTERRUPT_PREFIX } from '../core/texts';
import type { StoredItem } from '../core/types';

const short = (s: string, n: number) => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > n ? `${line.slice(0, n - 1)}…` : line;
};

/** The thread's title (memo `title`): the start of its first user text. */
export const titleOf = (text: string) => short(text.startsWith(INTERRUPT_PREFIX) ? text.slice(INTERRUPT_PREFIX.length) : text, 80);

/**
 * `slice 7: result of get_build_status`, `slice 3: user "is 42 green?"`, `slice 9: report from 1b2c…, event of
 * watch_repo`. The outcome of a slice is not known when it is scheduled: it shows in the activity's result and the
 * thread's current details.
 */
export function sliceSummary(n: number, append: readonly StoredItem[], toolName: (callId: string) => string | undefined, retry: boolean): string {
  const parts = append.map(({ item }) => {
    switch (item.kind) {
      case 'user':
        return `user "${titleOf(item.text).slice(0, 60)}"`;
      case 'tool_result':
        return `result of ${toolName(item.id) ?? item.id}`;
      case 'subscription_event':
        return item.childThreadId ? `report from ${item.childThreadId.slice(0, 8)}` : `event of ${toolName(item.toolCallId) ?? item.toolCallId}`;
      case 'tool_call':
        return `call ${item.name}`;
      default:
        return item.kind;
    }
  });
  const what = parts.join(', ') || 'continue';
  return short(`slice ${n}: ${retry ? 'retry of ' : ''}${what}`, 200);
}
