/**
 * What a thread does with a slice that failed on every attempt (release 0.2). A failure that says nothing about the
 * inputs — the store lost its file or holds other items than the workflow expects — blocks the thread: its items are
 * retried once new input arrives, after an operator has fixed the store. Any other failure (a poison input that
 * crashes a library, a worker that dies on it, a model that hangs on it) sets the batch aside: the thread records
 * what it dropped and why, answers each tool call whose result was in the batch with an error result (so history
 * never ends on an unanswered call), and goes on with later inputs.
 */
import { setAsideResult } from '../core/texts';
import type { SetAsideBatch, StoredItem } from '../core/types';

/** Failure types (the activity's `ApplicationFailure.type`) that block instead of setting the batch aside. */
export const BLOCKING_FAILURES: ReadonlySet<string> = new Set([
  'CommitConflictError',
  'StoreFileLostError',
  'SliceDiverged',
]);

/** Set-aside batches kept in the thread's state (and `status()`), most recent last. */
export const SET_ASIDE_KEPT = 20;

const REPLACEMENT = '/set-aside';

export interface SetAside {
  record: SetAsideBatch;
  /** Items the next slice commits instead: an error result for each tool call answered in the batch. */
  replacements: StoredItem[];
}

export function setAside(sliceId: string, items: readonly StoredItem[], reason: string): SetAside {
  // A batch of replacements that failed again is not replaced again: that would retry forever.
  const again = items.length > 0 && items.every((s) => s.messageId.endsWith(REPLACEMENT));
  const replacements: StoredItem[] = [];
  if (!again) {
    for (const s of items) {
      if (s.item.kind !== 'tool_result') continue;
      replacements.push({
        messageId: `${s.messageId}${REPLACEMENT}`,
        item: { kind: 'tool_result', id: s.item.id, content: [{ type: 'text', text: setAsideResult(reason) }] },
      });
    }
  }
  return {
    record: {
      sliceId,
      reason,
      messageIds: items.map((s) => s.messageId),
      answeredWithError: replacements.map((r) => (r.item.kind === 'tool_result' ? r.item.id : '')),
    },
    replacements,
  };
}
