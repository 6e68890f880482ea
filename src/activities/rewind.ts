/**
 * The `rewindThread` activity (issue 28 §2): the store's half of a rewind. The thread workflow runs it at a pause
 * between slices when it takes a `rewind` control input; it commits, as one slice, a `rewind` note (and the
 * interrupted answer of a call the rewind point leaves unanswered) together with the archived range `[to, length)`,
 * and tells the workflow which of the calls its state still tracks the range archived, so it can forget them.
 * Idempotent: a retry finds its slice committed and answers the same.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { INTERRUPTED_RESULT } from '../core/texts';
import { REWIND_REFUSED, type RewindInput, type RewindOutcome, type SliceResult } from '../core/slice-protocol';
import type { StoredItem } from '../core/types';
import { pendingAt, rewindPointError } from '../store/chain';
import { ArchiveLimitError, type ConversationStore, type ThreadRecord } from '../store/conversation-store';

export function createRewind(store: ConversationStore, cancelled: (threadId: string, callId: string) => void) {
  return async function rewindThread(input: RewindInput): Promise<RewindOutcome> {
    const { threadId, sliceId, to, expectedLength } = input;
    const refuse = (message: string) =>
      ApplicationFailure.create({ message, type: REWIND_REFUSED, nonRetryable: true });
    const record = await store.getThread(threadId);
    if (!record) throw refuse(`thread ${threadId} has no record in the store`);
    const range = (r: ThreadRecord) => (r.archived ?? []).findIndex(([f, e]) => f === to && e === expectedLength) + 1;
    let length: number;
    let branch: number;
    const prior = await store.findSlice(threadId, sliceId);
    if (prior) {
      // Committed by an earlier attempt: the same answer, read back.
      length = prior.length;
      branch = range(record);
    } else {
      const error = rewindPointError(record, to, expectedLength);
      if (error) throw refuse(error);
      branch = (record.archived?.length ?? 0) + 1;
      const items: StoredItem[] = [];
      // The call the point leaves unanswered (its answer is archived) gets the runtime's interrupted result, as a fork
      // at that point does; message ids of the rewind's own, so no id of the archived range repeats.
      const dangling = await pendingAt(store, record, to);
      if (dangling)
        items.push({
          messageId: `${sliceId}/interrupted`,
          item: { kind: 'tool_result', id: dangling.id, content: [{ type: 'text', text: INTERRUPTED_RESULT }] },
        });
      items.push({ messageId: `${sliceId}/rewind`, item: { kind: 'rewind', to, branch } });
      length = expectedLength + items.length;
      const result: SliceResult = {
        sliceId,
        length,
        pendingCall: null,
        answeredCallIds: [],
        followUps: [],
        interrupted: false,
        appended: items.length,
      };
      try {
        await store.commit({ threadId, sliceId, expectedLength, items, result, archive: [to, expectedLength] });
      } catch (e) {
        // The thread holds the most archived ranges it keeps (checked above; the store is the last word).
        if (e instanceof ArchiveLimitError) throw refuse(e.message);
        throw e;
      }
    }
    const archived = new Set<string>();
    for (const s of await store.load(threadId, to, expectedLength))
      if (s.item.kind === 'tool_call') archived.add(s.item.id);
    const archivedCalls = input.calls.filter((c) => archived.has(c));
    if (input.pendingCall !== undefined && archived.has(input.pendingCall)) cancelled(threadId, input.pendingCall);
    return { length, branch, archivedCalls };
  };
}
