/**
 * Parsed items of recently used threads, for a store that keeps them serialized. Committed items never change, so a
 * cached prefix of a thread stays valid forever: a load serves the prefix from memory and reads only what was
 * appended since. Items are deep-frozen and a cached array is never changed (extending replaces it), because every
 * caller shares them.
 */
import type { StoredItem } from '../core/types';

interface Entry {
  items: readonly StoredItem[];
  bytes: number;
}

export interface ItemCacheOptions {
  /** Bound on the estimated heap size of what is cached; 0 disables the cache. */
  maxBytes: number;
  /**
   * Threads shorter than this are not cached: a short history is cheap to parse, and an agent that ran one turn and
   * now waits on a tool must not hold memory.
   */
  minItems: number;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export class ItemPrefixCache {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  private readonly threads = new Map<string, Entry>();
  private bytes = 0;

  constructor(readonly options: ItemCacheOptions) {}

  /** The cached prefix of a thread, marking it as recently used. */
  get(threadId: string): readonly StoredItem[] {
    const e = this.threads.get(threadId);
    if (!e) return [];
    this.threads.delete(threadId);
    this.threads.set(threadId, e);
    return e.items;
  }

  /** Drops a thread's cached prefix (a store found it no longer matches its database). */
  forget(threadId: string): void {
    const e = this.threads.get(threadId);
    if (!e) return;
    this.threads.delete(threadId);
    this.bytes -= e.bytes;
  }

  /**
   * Appends items that start at position `from` of the thread. Ignored unless they continue the cached prefix
   * exactly (a thread not cached yet must start at 0), so the cache never holds a gap.
   * @param serializedChars the items' length as JSON text, from which their heap size is estimated
   */
  extend(threadId: string, from: number, items: readonly StoredItem[], serializedChars: number): void {
    const { maxBytes, minItems } = this.options;
    if (maxBytes <= 0 || items.length === 0 || from + items.length < minItems) return;
    const e = this.threads.get(threadId) ?? { items: [], bytes: 0 };
    if (e.items.length !== from) return;
    const bytes = 2 * serializedChars + 128 * items.length; // UTF-16 text plus object headers, roughly
    this.threads.delete(threadId);
    this.threads.set(threadId, { items: [...e.items, ...items.map(deepFreeze)], bytes: e.bytes + bytes });
    this.bytes += bytes;
    for (const [id, old] of this.threads) {
      if (this.bytes <= maxBytes) break;
      this.threads.delete(id);
      this.bytes -= old.bytes;
    }
  }
}
