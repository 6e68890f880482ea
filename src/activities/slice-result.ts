/**
 * What a slice commits, worked out from its completion alone: the items, the `SliceResult` the workflow reads, and the
 * compaction summary a compaction thread leaves for its parent. Pure: no store, no events; the caller tells listeners
 * (`result.compact` is the one that calls for a notice) and commits.
 */
import type { SliceResult } from '../core/slice-protocol';
import { boundedReply, callLines } from '../core/slice-outline';
import { contextTokens, type StoredItem, type ThreadKind, type TokenUsage } from '../core/types';
import type { NewSummary, ThreadRecord } from '../store/conversation-store';
import type { CompletionOutput } from './completion';

/** When a thread compacts itself (`SliceDependencies.compactionThreshold`, `model.contextWindow`). */
export interface CompactionSettings {
  /** Fraction of the context window; 0 turns automatic compaction off. */
  threshold: number;
  /** The model's context window in tokens; unknown means never. */
  window: number | undefined;
}

/** Did the last request fill more of the context window than the threshold (docs/semantics.md §12)? */
export function overThreshold(
  kind: ThreadKind,
  usage: TokenUsage | undefined,
  { threshold, window }: CompactionSettings,
): boolean {
  const used = usage && contextTokens(usage);
  return kind !== 'compaction' && threshold > 0 && !!window && used !== undefined && used > window * threshold;
}

/**
 * The summary a compaction thread leaves for its parent: its `close_thread` report or, if it just answered, that
 * answer. Saved with the commit, so a summary exists exactly when the closing slice committed.
 */
export function compactionSummary(
  record: ThreadRecord,
  out: CompletionOutput,
  lastText: string | undefined,
): NewSummary | undefined {
  if (record.kind !== 'compaction' || !record.parentThreadId || out.error || out.interrupted) return undefined;
  const report =
    out.action?.type === 'close' ? out.action.report : !out.asyncCall && !out.action ? lastText : undefined;
  if (report === undefined) return undefined;
  return {
    threadId: record.parentThreadId,
    sourceThreadId: record.threadId,
    upTo: record.spawnOrder ?? 0,
    summary: report,
  };
}

/** What `buildSliceResult` reads: the loaded slice and its completion's output. */
export interface SliceOutcomeInput {
  sliceId: string;
  /** The thread's committed length this slice started from. */
  committedLength: number;
  record: ThreadRecord;
  /** The slice's inputs, resolved, as they are committed ahead of what the completion flushed. */
  append: readonly StoredItem[];
  out: CompletionOutput;
  compaction: CompactionSettings;
}

/** What one slice commits: its items in order, its result, and a compaction thread's summary for its parent. */
export interface BuiltSlice {
  items: StoredItem[];
  result: SliceResult;
  summary?: NewSummary;
}

/**
 * The items, `SliceResult` and summary of a completed slice. `result.followUps` starts empty: dispatch, after the
 * commit, fills it. The optional fields are set in a fixed order, so the result's payload reads the same as before.
 */
export function buildSliceResult({
  sliceId,
  committedLength,
  record,
  append,
  out,
  compaction,
}: SliceOutcomeInput): BuiltSlice {
  const items = [...append, ...out.buffer.flushed];
  const lastText = [...items].reverse().find((s) => s.item.kind === 'assistant')?.item;
  const summary = compactionSummary(record, out, lastText?.kind === 'assistant' ? lastText.text : undefined);
  const result: SliceResult = {
    sliceId,
    length: committedLength + items.length,
    pendingCall: out.asyncCall
      ? { id: out.asyncCall.id, name: out.asyncCall.name, passive: out.asyncCall.passive }
      : null,
    answeredCallIds: out.answeredCallIds,
    followUps: [],
    interrupted: out.interrupted,
    appended: append.length,
  };
  if (out.usage) result.usage = out.usage;
  // For the Temporal UI (issue 17 §2): the reply whole up to a bound, and the calls this slice made.
  if (lastText?.kind === 'assistant') result.lastText = boundedReply(lastText.text);
  const calls = callLines(out.buffer.flushed);
  if (calls.length > 0) result.calls = calls;
  if (out.error) result.error = out.error;
  if (out.action) result.action = out.action;
  if (out.cancelledSubscriptions.length > 0) result.cancelledSubscriptions = out.cancelledSubscriptions;
  if (summary) {
    // A compaction thread that answered in text instead of closing: its answer is the summary; close it.
    if (!result.action) result.action = { type: 'close', callId: `${sliceId}-summary` };
  } else if (overThreshold(record.kind, out.lastRoundUsage, compaction)) {
    result.compact = true;
  }
  return summary ? { items, result, summary } : { items, result };
}
