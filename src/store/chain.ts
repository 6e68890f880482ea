/**
 * The chain of thread records a thread's history is made of (docs/architecture.md, "Data model"): its ancestors up to
 * the root, and for a fork (issue 28 §1) its source's chain before it. Store reads only, so the client (a fork's
 * inherited history) and the slice (the model view, `activities/history.ts`) share it.
 */
import type { StoredItem } from '../core/types';
import type { ConversationStore, ThreadRecord } from './conversation-store';

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
 * Every item a thread's history holds, inherited ones first (a child's from its ancestors, a fork's from its source),
 * summaries ignored: what `history` of the thread shows when asked for what it inherited too.
 */
export async function inheritedHistory(store: ConversationStore, threadId: string): Promise<StoredItem[]> {
  const chain = await viewChain(store, await threadChain(store, threadId));
  const out: StoredItem[] = [];
  for (let i = 0; i < chain.length; i++) {
    const to = i < chain.length - 1 ? inheritedUpTo(chain[i + 1]!) : undefined;
    out.push(...(await store.load(chain[i]!.threadId, 0, to)));
  }
  return out;
}
