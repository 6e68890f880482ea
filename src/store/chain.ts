/**
 * The chain of thread records a thread's history is made of (docs/architecture.md, "Data model"): its ancestors up to
 * the root, and for a fork (issue 28 §1) its source's chain before it. Store reads only, so the client (a fork's
 * inherited history) and the slice (the model view, `activities/history.ts`) share it.
 */
import { BUILTIN_TOOLS } from '../core/builtins';
import type { HistoryItem, PendingCall, StoredItem } from '../core/types';
import { coveringRange, mergeRanges, withoutRanges } from './archived-ranges';
import {
  type ArchivedRange,
  archiveLimitMessage,
  type ConversationStore,
  MAX_ARCHIVED_RANGES,
  type ThreadRecord,
} from './conversation-store';

/** The records from the root down to `threadId`. */
export async function threadChain(store: ConversationStore, threadId: string): Promise<ThreadRecord[]> {
  const chain: ThreadRecord[] = [];
  let id: string | undefined = threadId;
  while (id !== undefined) {
    const rec = await store.getThread(id);
    if (!rec) break;
    chain.unshift(rec);
    id = rec.parentThreadId;
    if (chain.length > 1000) throw new Error(`thread ${threadId}: ancestor chain does not end`);
  }
  return chain;
}

/**
 * How many of the previous record's own items a record in a chain inherits: a child's spawn order, or a fork's base
 * point (a fork is a root thread whose history starts with its source's).
 */
export const inheritedUpTo = (rec: ThreadRecord): number => rec.spawnOrder ?? rec.base?.upTo ?? 0;

/**
 * The records a thread's history is made of, root first: its ancestors, and when the root of those is a fork (issue 28
 * §1), the fork's source and its ancestors before it, and so on for a fork of a fork. The ancestors alone
 * ({@link threadChain}) stay what tools and reports see: a fork belongs to no tree but its own.
 */
export async function viewChain(store: ConversationStore, chain: readonly ThreadRecord[]): Promise<ThreadRecord[]> {
  let out = [...chain];
  for (let base = out[0]?.base; base !== undefined; base = out[0]?.base) {
    const source = await threadChain(store, base.threadId);
    if (source[source.length - 1]?.threadId !== base.threadId)
      throw new Error(`fork ${out[0]!.threadId}: its source thread ${base.threadId} is not in the store`);
    out = [...source, ...out];
    if (out.length > 1000) throw new Error(`thread ${chain[chain.length - 1]?.threadId}: fork chain does not end`);
  }
  return out;
}

/**
 * The archived ranges of `rec` that a view of its first `upTo` own items leaves out (`upTo` undefined: the thread's own
 * view, every range). A rewind commits its `rewind` item at its range's end, so a child or a fork made after the
 * rewind takes more than the range (`to < upTo`) and sees the thread as rewound; one made before took at most up to
 * the range's end and keeps seeing what it saw.
 */
export function visibleRanges(rec: ThreadRecord, upTo?: number): ArchivedRange[] {
  const all = rec.archived ?? [];
  return upTo === undefined ? all : all.filter(([, to]) => to < upTo);
}

/**
 * The archived branch (1-based) whose items a point of `rec`'s own history falls among, or 0: a point `at` (the first
 * `at` items) inside `(from, to]` would end on an archived item.
 */
export function branchAt(rec: ThreadRecord, at: number): number {
  return (rec.archived ?? []).findIndex(([from, to]) => at > from && at <= to) + 1;
}

/**
 * Why `to` is no rewind point of a thread `length` items long with these archived ranges, or undefined. A thread that
 * holds {@link MAX_ARCHIVED_RANGES} ranges takes no further rewind (the store would refuse its commit).
 */
export function rewindPointError(record: ThreadRecord, to: number, length: number): string | undefined {
  if (!Number.isSafeInteger(to) || to < 0 || to >= length)
    return `rewind point ${to} is not before the end of thread ${record.threadId} (0..${length - 1})`;
  const inside = branchAt(record, to);
  if (inside > 0) return `rewind point ${to} lies inside branch ${inside} of thread ${record.threadId}, archived`;
  if ((record.archived?.length ?? 0) >= MAX_ARCHIVED_RANGES) return archiveLimitMessage(record.threadId);
  return undefined;
}

/** Own items `[from, to)` of `rec` (default: all) without those its archived ranges hide from that view. */
export async function loadVisible(
  store: ConversationStore,
  rec: ThreadRecord,
  from = 0,
  to?: number,
): Promise<StoredItem[]> {
  const items = await store.load(rec.threadId, from, to);
  const ranges = visibleRanges(rec, to);
  return ranges.length === 0 ? items : withoutRanges(items, from, ranges);
}

/**
 * The thread's visible items among its own items from `from` to `to` (default: all), and the position they reach
 * (`to`, or the committed length): what a follower of the thread (client/follow.ts) has not shown yet.
 */
export async function committedSince(
  store: ConversationStore,
  threadId: string,
  from: number,
  to?: number,
): Promise<{ items: StoredItem[]; length: number }> {
  const rec = await store.getThread(threadId);
  const items = await store.load(threadId, from, to);
  const length = from + items.length;
  if (!rec) return { items, length };
  return { items: withoutRanges(items, from, visibleRanges(rec)), length };
}

/**
 * The last item the model would see among `rec`'s first `upTo` own items (archived ones and `rewind` notes skipped),
 * or undefined when there is none there (the caller looks further up the chain).
 */
export async function lastVisibleItem(
  store: ConversationStore,
  rec: ThreadRecord,
  upTo: number,
): Promise<HistoryItem | undefined> {
  const ranges = mergeRanges(visibleRanges(rec, upTo));
  for (let p = upTo - 1; p >= 0; p--) {
    const range = coveringRange(ranges, p);
    if (range) {
      p = range[0];
      continue;
    }
    const item = (await store.load(rec.threadId, p, p + 1))[0]?.item;
    if (item && item.kind !== 'rewind') return item;
  }
  return undefined;
}

/**
 * Every item a thread's history holds, inherited ones first (a child's from its ancestors, a fork's from its source),
 * summaries ignored, archived ranges left out: what `history` of the thread shows when asked for what it inherited too.
 */
export async function inheritedHistory(store: ConversationStore, threadId: string): Promise<StoredItem[]> {
  const chain = await viewChain(store, await threadChain(store, threadId));
  const out: StoredItem[] = [];
  for (let i = 0; i < chain.length; i++) {
    const to = i < chain.length - 1 ? inheritedUpTo(chain[i + 1]!) : undefined;
    out.push(...(await loadVisible(store, chain[i]!, 0, to)));
  }
  return out;
}

/**
 * The last item of what a record's first `upTo` own items stand for, inherited ones included, as the model sees them
 * (archived items and rewind notes skipped; none: undefined).
 */
async function lastItemBefore(
  store: ConversationStore,
  record: ThreadRecord,
  upTo: number,
): Promise<HistoryItem | undefined> {
  let rec: ThreadRecord | undefined = record;
  let n = upTo;
  for (let hops = 0; rec && hops < 1000; hops++) {
    const last = n > 0 ? await lastVisibleItem(store, rec, n) : undefined;
    if (last) return last;
    const from: string | undefined = rec.parentThreadId ?? rec.base?.threadId;
    n = rec.spawnOrder ?? rec.base?.upTo ?? 0;
    rec = from === undefined ? undefined : await store.getThread(from);
  }
  return undefined;
}

const passiveTools = new Set(BUILTIN_TOOLS.filter((t) => t.passive).map((t) => t.name));

/**
 * The call pending at a point of a thread's history (a fork's, a rewind's): the last item the model sees there, when it
 * is a tool call (nothing answers it there).
 */
export async function pendingAt(
  store: ConversationStore,
  record: ThreadRecord,
  at: number,
): Promise<PendingCall | undefined> {
  const last = await lastItemBefore(store, record, at);
  if (last?.kind !== 'tool_call') return undefined;
  // Of the runtime's own tools the store knows which wait passively; a custom tool's flag lives in the worker.
  return { id: last.id, name: last.name, passive: passiveTools.has(last.name) };
}
