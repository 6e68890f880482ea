/**
 * What a fork or a child inherits, as `history` and `tail` show it (issue 42 §2): the items of the threads it continues,
 * root first, each part marked with the thread it comes from, then a line that marks where the thread's own items
 * begin. Human lines mark each part with a header; JSON lines carry `inheritedFrom` (the thread an item comes from) on
 * inherited items only, so a thread's own items print exactly as before.
 */
import type { HistoryItem } from '../core/types';
import type { ConversationStore } from '../store/conversation-store';
import { colour, historyLine } from './format';
import { storeChain } from './lazy';

/** Items a thread inherits from one thread of its chain: that thread's first `upTo` own items, as it sees them. */
export interface InheritedPart {
  threadId: string;
  upTo: number;
  items: HistoryItem[];
}

export interface Inherited {
  /** The store has a record of the thread (written by its first slice; a fork's by the fork itself). */
  known: boolean;
  /** Root first; empty for a root thread that is no fork. */
  parts: InheritedPart[];
  /** The thread this one continues, and how: a fork of `threadId` at item `at`, or its child spawned at item `at`. */
  continues?: { as: 'fork' | 'child'; threadId: string; at: number };
}

/**
 * What `threadId` inherits: the chain of records its history is made of (store/chain.ts, as the model view and
 * `history({ inherited: true })` read it), without its own items; archived ranges and summaries left out as there.
 */
export async function inheritedOf(store: ConversationStore, threadId: string): Promise<Inherited> {
  const { inheritedUpTo, loadVisible, threadChain, viewChain } = storeChain();
  const chain = await viewChain(store, await threadChain(store, threadId));
  const record = chain[chain.length - 1];
  if (record?.threadId !== threadId) return { known: false, parts: [] };
  const parts: InheritedPart[] = [];
  for (let i = 0; i < chain.length - 1; i++) {
    const upTo = inheritedUpTo(chain[i + 1]!);
    const items = (await loadVisible(store, chain[i]!, 0, upTo)).map((s) => s.item);
    parts.push({ threadId: chain[i]!.threadId, upTo, items });
  }
  const continues = record.base
    ? { as: 'fork' as const, threadId: record.base.threadId, at: record.base.upTo }
    : record.parentThreadId !== undefined
      ? { as: 'child' as const, threadId: record.parentThreadId, at: record.spawnOrder ?? 0 }
      : undefined;
  return { known: true, parts, ...(continues && { continues }) };
}

/** How an item is printed: a human line (`full`: texts not shortened), or JSON (`tail` wraps it as `{history}`). */
export interface ItemFormat {
  json?: boolean;
  full?: boolean;
  /** `tail`'s JSON: `{"history": item}`, with `inheritedFrom` beside it. */
  wrapped?: boolean;
}

/** One committed item as a line; `from`: the thread it is inherited from. */
export function itemLine(item: HistoryItem, format: ItemFormat, from?: string): string {
  if (!format.json) return historyLine(item, format.full);
  const marked = from === undefined ? {} : { inheritedFrom: from };
  return JSON.stringify(format.wrapped ? { history: item, ...marked } : { ...item, ...marked });
}

/**
 * The lines before a thread's own items: each inherited part under a header naming its thread, then the boundary
 * that names the thread and what it continues. JSON has no headers: its inherited items say where they come from.
 */
export function inheritedLines(threadId: string, inherited: Inherited, format: ItemFormat): string[] {
  const lines: string[] = [];
  for (const part of inherited.parts) {
    if (part.items.length === 0) continue;
    if (!format.json) lines.push(colour.dim(`── inherited from ${part.threadId}: its first ${part.upTo} items ──`));
    for (const item of part.items) lines.push(itemLine(item, format, part.threadId));
  }
  const c = inherited.continues;
  if (c && !format.json) {
    const how =
      c.as === 'fork'
        ? `forked from ${c.threadId} at item ${c.at}`
        : `a child of ${c.threadId}, spawned at item ${c.at}`;
    lines.push(colour.dim(`── ${threadId}: its own items (${how}) ──`));
  }
  return lines;
}

/** The human line for a thread with no own items (JSON prints nothing): after the boundary, or on its own. */
export function noItemsLine(inherited: Inherited, ownOnly: boolean): string {
  if (ownOnly) return colour.dim(inherited.continues ? '(no items of its own yet)' : '(no committed items yet)');
  return colour.dim(inherited.continues ? '(none yet)' : '(no committed items yet)');
}
