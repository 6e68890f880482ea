/**
 * What the Temporal UI shows of a thread: one-line activity summaries that read like the conversation, and a title.
 * Pure and deterministic (workflow code).
 */
import { shortLine as short, titleOf } from '../core/title';
import type { StoredItem } from '../core/types';

export { titleOf };

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
