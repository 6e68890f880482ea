/**
 * The gateway's memory of RAP `view_update`s: the latest content of each view type of each thread, for a UI that
 * asks (`gateway.views(threadId)`). Views are display state a tool can resend at any time, never history, so the
 * memory is bounded and forgets rather than grows: only the latest content per (thread, view type) is kept, at most
 * `maxViewsPerThread` view types per thread and `maxTotalViewBytes` in all, and past either bound the least recently
 * updated view goes first (of that thread, or of any thread). One view over `maxViewBytes` is refused (413).
 */
import { inputLimitViolation } from '../core/validate';

/** Bounds of the views a gateway keeps (`RapGatewayOptions.views`). */
export interface ViewLimits {
  /**
   * Largest content of one view, serialized; a larger `view_update` is refused with 413 and neither kept nor announced.
   * @default 1048576 (1 MiB)
   */
  maxViewBytes?: number;
  /**
   * Most view types kept per thread; past it, the thread's least recently updated view is forgotten.
   * @default 64
   */
  maxViewsPerThread?: number;
  /**
   * Most bytes kept for all threads' views together (each view is charged its content, its thread id, its view type and
   * {@link VIEW_ENTRY_OVERHEAD} bytes); past it, the least recently updated views of any thread are forgotten.
   * @default 67108864 (64 MiB)
   */
  maxTotalViewBytes?: number;
}

export const DEFAULT_VIEW_LIMITS: Readonly<Required<ViewLimits>> = Object.freeze({
  maxViewBytes: 1024 * 1024,
  maxViewsPerThread: 64,
  maxTotalViewBytes: 64 * 1024 * 1024,
});

/** What each kept view costs besides its strings: so that many tiny views are bounded too, not only large ones. */
export const VIEW_ENTRY_OVERHEAD = 128;

/**
 * Why a view's content may not be kept or announced, or undefined: the same shape limits as every input (depth, width,
 * entries; the walk never recurses), so a deep view cannot overflow the stack of whatever serializes it next.
 */
export function viewViolation(content: unknown): string | undefined {
  // Wrapped, so paths read `view.…` and no field of it counts as an input's long content string.
  return inputLimitViolation({ view: content });
}

interface Entry {
  threadId: string;
  viewType: string;
  content: unknown;
  bytes: number;
}

export interface ViewStore {
  /** Keeps `content` as the thread's latest view of `viewType` (`bytes`: its serialized size), forgetting to fit. */
  set(threadId: string, viewType: string, content: unknown, bytes: number): void;
  /** The latest content of each view of a thread that is still kept. */
  views(threadId: string): Record<string, unknown>;
}

export function viewStore(limits: ViewLimits = {}): ViewStore {
  const l = { ...DEFAULT_VIEW_LIMITS, ...limits };
  for (const [name, v] of Object.entries(l)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`views.${name} must be a positive integer, got ${v}`);
  }
  // Sets and Maps keep insertion order, and an update re-inserts: the first entry is the least recently updated.
  const all = new Set<Entry>();
  const byThread = new Map<string, Map<string, Entry>>();
  let total = 0;
  const forget = (e: Entry) => {
    all.delete(e);
    total -= e.bytes;
    const views = byThread.get(e.threadId);
    views?.delete(e.viewType);
    if (views?.size === 0) byThread.delete(e.threadId);
  };
  return {
    set(threadId, viewType, content, contentBytes) {
      const previous = byThread.get(threadId)?.get(viewType);
      if (previous) forget(previous);
      const bytes = VIEW_ENTRY_OVERHEAD + Buffer.byteLength(threadId) + Buffer.byteLength(viewType) + contentBytes;
      // A view larger than the whole budget is not kept: it would push out everything, then itself.
      if (bytes > l.maxTotalViewBytes) return;
      const older = byThread.get(threadId);
      while (older !== undefined && older.size >= l.maxViewsPerThread) forget(older.values().next().value!);
      while (total + bytes > l.maxTotalViewBytes) forget(all.values().next().value!);
      let mine = byThread.get(threadId);
      if (mine === undefined) byThread.set(threadId, (mine = new Map()));
      const entry: Entry = { threadId, viewType, content, bytes };
      mine.set(viewType, entry);
      all.add(entry);
      total += bytes;
    },
    views(threadId) {
      const out: Record<string, unknown> = {};
      // Defined, not assigned: a view type named `__proto__` is an own property like any other.
      for (const [type, e] of byThread.get(threadId) ?? []) {
        Object.defineProperty(out, type, { value: e.content, enumerable: true, writable: true, configurable: true });
      }
      return out;
    },
  };
}
