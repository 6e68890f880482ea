/**
 * Loading a thread's effective history (docs/architecture.md, "Data model"): what it inherited from its ancestors up to
 * each spawn point, then its own items, with compaction summaries standing in for what they cover. Also fills in the
 * synthetic `receive_event__injected` calls whose original call lives in the thread's full (uncompacted) history.
 */
import { compactedSummary, INJECTED_TOOL_NAME } from '../core/texts';
import type { HistoryItem, StoredItem } from '../core/types';
import { inheritedUpTo, loadVisible, viewChain, visibleRanges } from '../store/chain';
import type { ConversationStore, ThreadRecord } from '../store/conversation-store';

export { inheritedHistory, threadChain, viewChain } from '../store/chain';

const summaryItem = (summary: string): HistoryItem => ({ kind: 'assistant', text: compactedSummary(summary) });

/**
 * What the model sees of a thread whose own committed items are `own` (docs/semantics.md §12):
 * - the thread's own latest summary, then its items from the summary's end (ancestors are inside the summary);
 * - else the nearest ancestor summary that lies within what the thread inherited, then everything after it;
 * - else everything inherited, then its own items.
 * A child spawned before its parent compacted has a cutoff below the summary's end, so it keeps its exact inheritance.
 */
export async function modelView(store: ConversationStore, ancestry: readonly ThreadRecord[]): Promise<HistoryItem[]> {
  // A fork's source (and what the source inherited) comes before it exactly as a parent before its child.
  const chain = await viewChain(store, ancestry);
  const self = chain[chain.length - 1]!;
  // Archived ranges (rewinds, issue 28 §2) are left out everywhere, and so are summaries of what they archived.
  const mine = await store.latestSummary(self.threadId, undefined, visibleRanges(self));
  // Only what the model will see is read: after a compaction, the summary's tail.
  if (mine) return [summaryItem(mine.summary), ...(await loadVisible(store, self, mine.upTo)).map((s) => s.item)];
  const out: HistoryItem[] = [];
  let start = 0;
  for (let i = chain.length - 2; i >= 0; i--) {
    const cutoff = inheritedUpTo(chain[i + 1]!);
    const s = await store.latestSummary(chain[i]!.threadId, cutoff, visibleRanges(chain[i]!, cutoff));
    if (s) {
      out.push(summaryItem(s.summary), ...(await loadVisible(store, chain[i]!, s.upTo, cutoff)).map((x) => x.item));
      start = i + 1;
      break;
    }
  }
  for (let i = start; i < chain.length - 1; i++) {
    out.push(...(await loadVisible(store, chain[i]!, 0, inheritedUpTo(chain[i + 1]!))).map((x) => x.item));
  }
  out.push(...(await loadVisible(store, self)).map((s) => s.item));
  return out;
}

export type CallLookup = (callId: string) => Promise<{ name: string; args: unknown } | undefined>;

/**
 * Finds a tool call in what the model sees, else in the thread's full stored history and what it inherited (a
 * summary must not orphan a late report or event).
 */
export function callLookup(
  store: ConversationStore,
  ancestry: readonly ThreadRecord[],
  view: readonly HistoryItem[],
): CallLookup {
  const visible = new Map<string, { name: string; args: unknown }>();
  for (const it of view) if (it.kind === 'tool_call') visible.set(it.id, { name: it.name, args: it.args });
  // Read only when a call is not in view (rare): a fork's source chain costs reads.
  let whole: Promise<ThreadRecord[]> | undefined;
  return async (callId) => {
    const seen = visible.get(callId);
    if (seen) return seen;
    const chain = await (whole ??= viewChain(store, ancestry));
    for (let i = chain.length - 1; i >= 0; i--) {
      const before = i === chain.length - 1 ? undefined : inheritedUpTo(chain[i + 1]!);
      const found = await store.findToolCall(chain[i]!.threadId, callId, before);
      if (found) return { name: found.name, args: found.args };
    }
    return undefined;
  };
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
export async function resolveInjected(lookup: CallLookup, append: readonly StoredItem[]): Promise<StoredItem[]> {
  const calls = new Map<string, { name: string; args: unknown }>();
  const complete = async (args: unknown): Promise<InjectedArgs> => {
    const a = (args ?? {}) as InjectedArgs;
    const id = a.original_tool_call_id;
    const original = id ? (calls.get(id) ?? (await lookup(id))) : undefined;
    return {
      original_args: a.original_args ?? original?.args ?? null,
      original_tool_call_id: id,
      original_tool_name: a.original_tool_name ?? original?.name ?? 'unknown',
    };
  };
  const out: StoredItem[] = [];
  for (const s of append) {
    const it = s.item;
    if (it.kind === 'tool_call' && it.name === INJECTED_TOOL_NAME) {
      const item: HistoryItem = { ...it, args: await complete(it.args) };
      calls.set(it.id, { name: it.name, args: item.args });
      out.push({ ...s, item });
    } else if (it.kind === 'subscription_event') {
      out.push({ ...s, item: { ...it, invocation: { ...it.invocation, args: await complete(it.invocation.args) } } });
    } else {
      if (it.kind === 'tool_call') calls.set(it.id, { name: it.name, args: it.args });
      out.push(s);
    }
  }
  return out;
}
