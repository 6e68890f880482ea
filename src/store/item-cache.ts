/**
 * Parsed items of recently used threads, for a store that keeps them serialized. Committed items never change, so a
 * cached prefix of a thread stays valid forever: a load serves the prefix from memory and reads only what was
 * appended since. Items are deep-frozen, because every caller shares them.
 */
import type { StoredItem } from '../core/types';

interface Entry {
  items: StoredItem[];
  bytes: number;
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

  /** @param maxBytes bound on the (caller-estimated) size of what is cached; 0 disables the cache. */
  constructor(readonly maxBytes: number) {}

  /** The cached prefix of a thread (read-only), marking it as recently used. */
  get(threadId: string): readonly StoredItem[] | undefined {
    const e = this.threads.get(threadId);
    if (!e) return undefined;
    this.threads.delete(threadId);
    this.threads.set(threadId, e);
    return e.items;
  }

  /**
   * Appends items that start at position `from` of the thread. Ignored unless they continue the cached prefix
   * exactly (a thread not cached yet must start at 0), so the cache never holds a gap.
   */
  extend(threadId: string, from: number, items: readonly StoredItem[], bytes: number): void {
    if (this.maxBytes <= 0 || items.length === 0) return;
    const e = this.threads.get(threadId) ?? { items: [], bytes: 0 };
    if (e.items.length !== from) return;
    for (const it of items) e.items.push(deepFreeze(it));
    e.bytes += bytes;
    this.bytes += bytes;
    this.threads.delete(threadId);
    this.threads.set(threadId, e);
    for (const [id, old] of this.threads) {
      if (this.bytes <= this.maxBytes) break;
      this.threads.delete(id);
      this.bytes -= old.bytes;
    }
  }

  /** Estimated bytes held. */
  get size(): number {
    return this.bytes;
  }
}
