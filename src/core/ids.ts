/** Message ids the runtime writes (docs/architecture.md, "Data model"). Deterministic, so retries are idempotent. */

export const messageIds = {
  completion: (sliceId: string, n: number) => `${sliceId}-completion-${n}`,
  syncResult: (toolCallId: string, n: number) => `${toolCallId}-sync-result-${n}`,
  unknownTool: (toolCallId: string) => `${toolCallId}-unknown-tool`,
  interrupted: (toolCallId: string) => `${toolCallId}-interrupted`,
  invalidArgs: (toolCallId: string) => `${toolCallId}-invalid-args`,
  /** Dedup id of the result a tool sends for its own call. */
  toolResult: (toolCallId: string) => `${toolCallId}-result`,
  /** Dedup id of a runtime-generated error result for a call (failed dispatch, invalid arguments). */
  toolError: (toolCallId: string) => `${toolCallId}-error`,
} as const;

/** The slice id: unique per thread and stable across retries and continue-as-new. */
export function sliceIdFor(threadId: string, seq: number): string {
  return `${threadId}/slice-${seq}`;
}
