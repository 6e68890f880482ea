/**
 * Archived ranges (rewinds, issue 28 §2) as the positions they cover (issue 38 finding 7). A thread's ranges nest or
 * follow each other, and a view hides every position any of them covers: merged once into sorted, disjoint ranges, a
 * view costs one sweep over its items and one sort of the ranges, O(items + ranges · log ranges), instead of testing
 * every item against every range.
 */
import type { ArchivedRange } from './conversation-store';

/**
 * The positions `ranges` cover (`[from, to)` each; empty ones cover none), as ranges sorted by `from`, disjoint and
 * not touching: `[1, 3)` and `[3, 5)` become `[1, 5)`. Also what hides a summary: its `upTo` in `(from, to]` of a range
 * is `upTo − 1` in `[from, to)`, so the merged ranges hide the same summaries.
 */
export function mergeRanges(ranges: readonly ArchivedRange[]): ArchivedRange[] {
  const sorted = ranges.filter(([from, to]) => from < to).sort((a, b) => a[0] - b[0]);
  const out: ArchivedRange[] = [];
  for (const [from, to] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1]) {
      if (to > last[1]) last[1] = to;
    } else {
      out.push([from, to]);
    }
  }
  return out;
}

/** The range of `merged` ({@link mergeRanges}) that covers `position`, or undefined: a binary search. */
export function coveringRange(merged: readonly ArchivedRange[], position: number): ArchivedRange | undefined {
  let lo = 0;
  let hi = merged.length;
  // The first range starting after `position`; the one before it is the only one that may cover it.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (merged[mid]![0] <= position) lo = mid + 1;
    else hi = mid;
  }
  const range = merged[lo - 1];
  return range && position < range[1] ? range : undefined;
}

/** Whether a summary of the first `upTo` items ends inside a range of `merged` (`upTo` in `(from, to]`). */
export const endsInside = (merged: readonly ArchivedRange[], upTo: number): boolean =>
  coveringRange(merged, upTo - 1) !== undefined;

/** `items`, the first at position `from`, without those `ranges` cover: one sweep. */
export function withoutRanges<T>(items: readonly T[], from: number, ranges: readonly ArchivedRange[]): T[] {
  const merged = mergeRanges(ranges);
  const out: T[] = [];
  let j = 0;
  for (let i = 0; i < items.length; i++) {
    const position = from + i;
    while (j < merged.length && merged[j]![1] <= position) j++;
    if (j < merged.length && merged[j]![0] <= position) continue;
    out.push(items[i]!);
  }
  return out;
}
