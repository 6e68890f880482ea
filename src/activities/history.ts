/**
 * Loading a thread's effective history (reference spec §6.5): what it inherited from its ancestors up to each spawn
 * point, then its own items, with compaction summaries standing in for what they cover. Also fills in the synthetic
 * `receive_event__injected` calls whose original call lives in the thread's full (uncompacted) history.
 */
import { compactedSummary, INJECTED_TOOL_NAME } from '../core/texts';
import type { HistoryItem, StoredItem } from '../core/types';
import type { ConversationStore, ThreadRecord } from '../store/conversation-store';

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

/** The items a thread inherited from its ancestors, uncompacted (empty for a root). */
export async function inheritedHistory(store: ConversationStore, chain: readonly ThreadRecord[]): Promise<StoredItem[]> {
  const out: StoredItem[] = [];
  for (let i = 0; i < chain.length - 1; i++) {
    const cutoff = chain[i + 1]!.spawnOrder ?? 0;
    out.push(...(await store.load(chain[i]!.threadId, 0, cutoff)));
  }
  return out;
}

const summaryItem = (summary: string): HistoryItem => ({ kind: 'assistant', text: compactedSummary(summary) });

/**
 * What the model sees of a thread whose own committed items are `own` (reference spec §6.5):
 * - the thread's own latest summary, then its items from the summary's end (ancestors are inside the summary);
 * - else the nearest ancestor summary that lies within what the thread inherited, then everything after it;
 * - else everything inherited, then its own items.
 * A child spawned before its parent compacted has a cutoff below the summary's end, so it keeps its exact inheritance.
 */
export async function modelView(store: ConversationStore, chain: readonly ThreadRecord[], own: readonly StoredItem[]): Promise<HistoryItem[]> {
  const self = chain[chain.length - 1]!;
  const mine = await store.latestSummary(self.threadId);
  if (mine) return [summaryItem(mine.summary), ...own.slice(mine.upTo).map((s) => s.item)];
  const out: HistoryItem[] = [];
  let start = 0;
  for (let i = chain.length - 2; i >= 0; i--) {
    const cutoff = chain[i + 1]!.spawnOrder ?? 0;
    const s = await store.latestSummary(chain[i]!.threadId, cutoff);
    if (s) {
      out.push(summaryItem(s.summary), ...(await store.load(chain[i]!.threadId, s.upTo, cutoff)).map((x) => x.item));
      start = i + 1;
      break;
    }
  }
  for (let i = start; i < chain.length - 1; i++) {
    out.push(...(await store.load(chain[i]!.threadId, 0, chain[i + 1]!.spawnOrder ?? 0)).map((x) => x.item));
  }
  out.push(...own.map((s) => s.item));
  return out;
}

interface InjectedArgs {
  original_tool_name?: string;
  original_tool_call_id?: string;
  original_args?: unknown;
}

/**
 * The workflow names only the original call id of an injected event; the slice, which holds the history, adds the
 * original tool's name and arguments so the model sees `receive_event__injected(original_tool_name, ...)`.
 */
export function resolveInjected(history: readonly HistoryItem[], append: StoredItem[]): StoredItem[] {
  const calls = new Map<string, { name: string; args: unknown }>();
  for (const it of history) if (it.kind === 'tool_call') calls.set(it.id, { name: it.name, args: it.args });
  const complete = (args: unknown): InjectedArgs => {
    const a = (args ?? {}) as InjectedArgs;
    const original = a.original_tool_call_id ? calls.get(a.original_tool_call_id) : undefined;
    return {
      original_args: a.original_args ?? original?.args ?? null,
      original_tool_call_id: a.original_tool_call_id,
      original_tool_name: a.original_tool_name ?? original?.name ?? 'unknown',
    };
  };
  return append.map((s) => {
    const it = s.item;
    if (it.kind === 'tool_call' && it.name === INJECTED_TOOL_NAME) {
      const item: HistoryItem = { ...it, args: complete(it.args) };
      calls.set(it.id, { name: it.name, args: item.args });
      return { ...s, item };
    }
    if (it.kind === 'subscription_event') {
      return { ...s, item: { ...it, invocation: { ...it.invocation, args: complete(it.invocation.args) } } };
    }
    if (it.kind === 'tool_call') calls.set(it.id, { name: it.name, args: it.args });
    return s;
  });
}
