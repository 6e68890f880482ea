/**
 * A thread's store as one of its slices found it: the thread's own items cut at the slice's start, and its record
 * without the ranges later rewinds archived, so the model view (`activities/history.ts`) and call lookups read what
 * existed then. Everything else is the store itself.
 *
 * One thing the record cannot say: when a compaction summary was saved. A summary covering items before the cut
 * counts as seen, so a slice that ran while its thread's compaction was still at work is rebuilt as if it had seen it
 * (docs/evals.md, "Limits").
 */
import type { ConversationStore, ThreadRecord } from '../store/conversation-store';

/**
 * A thread's record as a slice that started at own item `length` found it: without the ranges later rewinds archived.
 * A rewind's range ends where its `rewind` item was committed, so the ranges a slice saw end before its start.
 */
export function recordAsOf(record: ThreadRecord, length: number): ThreadRecord {
  const archived = (record.archived ?? []).filter(([, to]) => to < length);
  const { archived: _all, ...rest } = record;
  return archived.length > 0 ? { ...rest, archived } : rest;
}

export function storeAsOf(store: ConversationStore, threadId: string, length: number): ConversationStore {
  const cut = (n: number | undefined) => Math.min(n ?? Number.MAX_SAFE_INTEGER, length);
  const own: Partial<ConversationStore> = {
    getThread: async (id) => {
      const rec = await store.getThread(id);
      return rec && id === threadId ? recordAsOf(rec, length) : rec;
    },
    load: (id, from, to) => (id === threadId ? store.load(id, from, cut(to)) : store.load(id, from, to)),
    length: async (id) => (id === threadId ? Math.min(await store.length(id), length) : store.length(id)),
    findToolCall: (id, callId, before) => store.findToolCall(id, callId, id === threadId ? cut(before) : before),
    latestSummary: (id, maxUpTo, ...rest: unknown[]) =>
      (store.latestSummary as (...a: unknown[]) => ReturnType<ConversationStore['latestSummary']>)(
        id,
        id === threadId ? cut(maxUpTo) : maxUpTo,
        ...rest,
      ),
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (Object.hasOwn(own, prop)) return own[prop as keyof typeof own];
      const value: unknown = Reflect.get(target, prop, receiver);
      // The store's own methods run on the store itself (its private fields), not on the proxy.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
