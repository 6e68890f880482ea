/** The in-memory store's records for evals (`eval-records.ts`). */
import type { SliceResult } from '../core/slice-protocol';
import {
  checkScore,
  type EvalRecords,
  inCommitOrder,
  type NewScore,
  type OutcomeScore,
  type ScoreQuery,
} from './eval-records';

export class MemoryEvals implements EvalRecords {
  private readonly stored: OutcomeScore[] = [];

  /** `slices`: the store's own map of committed slices, keyed `threadId\u0000sliceId`. */
  constructor(private readonly committed: ReadonlyMap<string, SliceResult>) {}

  async slices(threadId: string) {
    const prefix = `${threadId}\u0000`;
    return inCommitOrder(
      [...this.committed]
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, result]) => ({ sliceId: k.slice(prefix.length), result: structuredClone(result) })),
    );
  }

  async addScore(score: NewScore): Promise<OutcomeScore> {
    checkScore(score);
    const stored: OutcomeScore = { ...score, recordedAt: Date.now() };
    this.stored.push(stored);
    return { ...stored };
  }

  async scores(query: ScoreQuery = {}): Promise<OutcomeScore[]> {
    return this.stored
      .filter(
        (s) =>
          (query.threadId === undefined || s.threadId === query.threadId) &&
          (query.sliceId === undefined || s.sliceId === query.sliceId) &&
          (query.name === undefined || s.name === query.name),
      )
      .map((s) => ({ ...s }));
  }
}
