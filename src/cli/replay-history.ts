/** Exported thread histories (`temporal workflow show --output json`), as `replay` reads them. */

/**
 * The workflow id a history was recorded under, from its start event (servers since 1.23 write it there). A replay must
 * run under it: a thread started by hand is named by its workflow id (decision 58), and under another id its signal
 * handler takes another path than the one recorded.
 */
export function workflowIdOfHistory(history: unknown): string | undefined {
  const events = (
    history as { events?: { workflowExecutionStartedEventAttributes?: { workflowId?: unknown } }[] } | null
  )?.events;
  const id = Array.isArray(events) ? events[0]?.workflowExecutionStartedEventAttributes?.workflowId : undefined;
  return typeof id === 'string' && id !== '' ? id : undefined;
}
