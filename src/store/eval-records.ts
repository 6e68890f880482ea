/**
 * What evals read and write in the conversation store (issue 29 §1): a thread's committed slices in order (to rebuild
 * each recorded model request), and outcome scores attached to a thread or one of its slices, days after it ran. Each
 * store has it as `store.evals`, in tables of its own (`sqlite-evals.ts`, `postgres-evals.ts`, `memory-evals.ts`).
 */
import type { SliceResult } from '../core/slice-protocol';

/** One committed slice: its id and the result recorded with its commit. */
export interface RecordedSlice {
  sliceId: string;
  result: SliceResult;
}

/** A score to attach: to a thread, or to one of its slices. */
export interface NewScore {
  threadId: string;
  /** The slice it is about; absent: the thread as a whole. */
  sliceId?: string;
  /** What is measured, e.g. `merged` or `user_rating`. 1-200 characters. */
  name: string;
  /** A finite number (a boolean outcome is 1 or 0). */
  value: number;
  /** Free text: who scored, why, a link. At most 2,000 characters. */
  note?: string;
}

/** A stored score. Scores are appended: scoring the same name again adds a row, and readers take the latest. */
export interface OutcomeScore extends NewScore {
  /** When it was stored, ms since the epoch. */
  recordedAt: number;
}

/** Which scores to list; every field narrows. */
export interface ScoreQuery {
  threadId?: string;
  sliceId?: string;
  name?: string;
}

/** A score the store refuses: a non-finite value, an empty or overlong name, an overlong note. */
export class InvalidScoreError extends Error {
  override readonly name = 'InvalidScoreError';
}

const MAX_NAME = 200;
const MAX_NOTE = 2000;

/** Checks a score before any store writes it; the same rules in every store. */
export function checkScore(score: NewScore): void {
  if (typeof score.threadId !== 'string' || score.threadId === '')
    throw new InvalidScoreError('a score needs a thread id');
  if (score.sliceId !== undefined && (typeof score.sliceId !== 'string' || score.sliceId === ''))
    throw new InvalidScoreError('a slice id, when given, must be a non-empty string');
  if (typeof score.name !== 'string' || score.name.trim() === '' || score.name.length > MAX_NAME)
    throw new InvalidScoreError(`a score's name must be 1-${MAX_NAME} characters, not all blank`);
  if (typeof score.value !== 'number' || !Number.isFinite(score.value))
    throw new InvalidScoreError(`score '${score.name}': the value must be a finite number, got ${String(score.value)}`);
  if (score.note !== undefined && (typeof score.note !== 'string' || score.note.length > MAX_NOTE))
    throw new InvalidScoreError(`score '${score.name}': a note is text of at most ${MAX_NOTE} characters`);
}

/** Orders a thread's slices as they were committed: by the length each left, then by their sequence number. */
export function inCommitOrder(slices: RecordedSlice[]): RecordedSlice[] {
  const seq = (id: string) => Number(/\/slice-(\d+)$/.exec(id)?.[1] ?? Number.MAX_SAFE_INTEGER);
  return slices.sort((a, b) => a.result.length - b.result.length || seq(a.sliceId) - seq(b.sliceId));
}

/** A stored score as both SQL stores return it. */
export interface ScoreRow {
  thread_id: string;
  slice_id: string | null;
  name: string;
  value: number | string;
  note: string | null;
  recorded_at: number | string;
}

/** A {@link ScoreRow} as an {@link OutcomeScore} (PostgreSQL returns a `bigint` as text). */
export const scoreOf = (r: ScoreRow): OutcomeScore => ({
  threadId: r.thread_id,
  ...(r.slice_id !== null && { sliceId: r.slice_id }),
  name: r.name,
  value: Number(r.value),
  ...(r.note !== null && { note: r.note }),
  recordedAt: Number(r.recorded_at),
});

/** The store's records for evals (`ConversationStore.evals`). */
export interface EvalRecords {
  /** The thread's committed slices, in commit order (empty for an unknown thread). */
  slices(threadId: string): Promise<RecordedSlice[]>;
  /** Stores a score ({@link checkScore} first: an invalid one throws {@link InvalidScoreError}). */
  addScore(score: NewScore): Promise<OutcomeScore>;
  /** Stored scores matching `query`, oldest first. */
  scores(query?: ScoreQuery): Promise<OutcomeScore[]>;
}
