/**
 * Deferred outcome scores (issue 29 §1): a number attached to a thread or one of its slices, days after it ran ("the
 * PR was merged"), stored with it in the conversation store and listed by eval reports.
 */
import type { ConversationStore } from '../store/conversation-store';
import type { OutcomeScore, ScoreQuery } from '../store/eval-records';
import { UnknownSliceError, UnknownThreadError } from './errors';
import { sliceNumber } from './recorded';

export interface ScoreInput {
  threadId: string;
  /** The slice: its number (`slice-<n>`, as `eval` reports show) or its whole id; absent: the thread as a whole. */
  slice?: number | string;
  name: string;
  /** A finite number (1/0 for a yes/no outcome). */
  value: number;
  note?: string;
}

/**
 * Stores a score with a thread (or one of its slices).
 * @throws UnknownThreadError, UnknownSliceError, InvalidScoreError (a non-finite value, a blank name)
 * @example await recordScore(store, { threadId: 'pr-bot-17', name: 'merged', value: 1, note: 'PR #412' })
 */
export async function recordScore(store: ConversationStore, input: ScoreInput): Promise<OutcomeScore> {
  if (!(await store.getThread(input.threadId)) && (await store.length(input.threadId)) === 0)
    throw new UnknownThreadError(input.threadId);
  let sliceId: string | undefined;
  if (input.slice !== undefined) {
    const slices = await store.evals.slices(input.threadId);
    const wanted = input.slice;
    const found = slices.find((s, i) =>
      typeof wanted === 'number'
        ? sliceNumber(input.threadId, s.sliceId, i) === wanted
        : s.sliceId === wanted || s.sliceId === `${input.threadId}/${wanted}`,
    );
    if (!found) throw new UnknownSliceError(`thread ${input.threadId} committed no slice ${String(wanted)}`);
    sliceId = found.sliceId;
  }
  return store.evals.addScore({
    threadId: input.threadId,
    ...(sliceId !== undefined && { sliceId }),
    name: input.name,
    value: input.value,
    ...(input.note !== undefined && { note: input.note }),
  });
}

/**
 * Stored scores matching `query` (every field narrows), oldest first.
 * @example const merged = await scores(store, { name: 'merged' })
 */
export function scores(store: ConversationStore, query: ScoreQuery = {}): Promise<OutcomeScore[]> {
  return store.evals.scores(query);
}
