/** The live events that announce what a slice appends to its thread's history before the model runs. */
import { INTERRUPT_PREFIX } from '../core/texts';
import type { StoredItem, ThreadEvent } from '../core/types';
import { firstText } from '../model/projection';

export function eventsForAppended(threadId: string, entries: readonly StoredItem[]): ThreadEvent[] {
  const events: ThreadEvent[] = [];
  for (const { item } of entries) {
    if (item.kind === 'user') {
      const text = item.text.startsWith(INTERRUPT_PREFIX) ? item.text.slice(INTERRUPT_PREFIX.length) : item.text;
      events.push({ threadId, type: 'user_input', text });
    } else if (item.kind === 'tool_result') {
      events.push({ threadId, type: 'tool_result', toolCallId: item.id, text: firstText(item.content) });
    } else if (item.kind === 'subscription_event') {
      const name = (item.invocation.args as { original_tool_name?: unknown } | undefined)?.original_tool_name;
      events.push({
        threadId,
        type: 'event',
        toolCallId: item.toolCallId,
        ...(typeof name === 'string' && { toolName: name }),
        ...(item.childThreadId !== undefined && { childThreadId: item.childThreadId }),
        text: firstText(item.result.content),
      });
    }
  }
  return events;
}
