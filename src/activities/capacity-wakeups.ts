/**
 * The waking half of provider limits (issue 41): a thread refused for capacity waits on its key's wake-up list in the
 * store, not on a polling timer. Every worker that has threads waiting on a key dispatches it when capacity may have
 * freed — at once after one of its calls ends, and when the key says its rate allows the next request — and signals
 * (`capacity`) the threads the store held a grant for. The store's transaction gives each thread to one dispatch, so
 * any number of workers may run this side by side; a worker that dies leaves the rest to the others, and to each
 * thread's own fallback timer.
 */
import { type ProviderLimits, RELEASE_SETTLE_MS } from '../core/capacity';
import type { CapacityLedger } from '../store/conversation-store';

/** While threads wait only for a lease's end, a dispatch runs this often anyway (a dead worker's lease expires). */
export const IDLE_DISPATCH_MS = 1_000;

export interface CapacityWakeups {
  /** A thread of this worker joined `key`'s wake-up list: dispatch the key soon. */
  waiting(key: string, limits: ProviderLimits): void;
  /** A call on `key` ended: its capacity may go to a waiting thread now. */
  freed(key: string, limits: ProviderLimits): void;
  /**
   * Resolves at the next `freed(key)` of this worker, or after `maxMs`: a woken thread waiting for a concurrency slot
   * asks again then (another worker's call ending is seen at the timeout).
   */
  nextFree(key: string, maxMs: number, signal?: AbortSignal): Promise<void>;
  /** Stops every timer (the worker shuts down). */
  close(): void;
}

interface KeyTimer {
  limits: ProviderLimits;
  timer?: NodeJS.Timeout;
  /** When the pending timer fires. */
  at?: number;
  running: boolean;
  /** A dispatch was asked for while one ran: run again after it. */
  again: boolean;
}

/**
 * Dispatches keys on `ledger` and wakes the threads it names with `wake` (a signal to the thread's workflow); `warn`
 * hears of dispatches that failed (the store unreachable: the threads' fallback timers bring them back).
 */
export function capacityWakeups(
  ledger: CapacityLedger,
  wake: (workflowId: string, key: string) => Promise<void>,
  warn: (message: string, error: unknown) => void = () => undefined,
): CapacityWakeups {
  const keys = new Map<string, KeyTimer>();
  /** Threads of this worker waiting for a slot on a key, with a grant held: told when one of its calls ends. */
  const freeWaiters = new Map<string, Set<() => void>>();
  let closed = false;

  const schedule = (key: string, k: KeyTimer, inMs: number) => {
    if (closed) return;
    const at = Date.now() + inMs;
    if (k.timer && k.at !== undefined && k.at <= at) return;
    if (k.timer) clearTimeout(k.timer);
    k.at = at;
    k.timer = setTimeout(() => {
      k.timer = undefined;
      k.at = undefined;
      void run(key, k);
    }, inMs);
    k.timer.unref();
  };

  const run = async (key: string, k: KeyTimer): Promise<void> => {
    if (k.running) {
      k.again = true;
      return;
    }
    k.running = true;
    try {
      if (!ledger.dispatch) return;
      const { woken, againInMs, waiting } = await ledger.dispatch(key, k.limits);
      for (const id of woken) void wake(id, key).catch((e: unknown) => warn(`waking ${id} for ${key}`, e));
      if (againInMs !== undefined) schedule(key, k, againInMs);
      else if ((waiting ?? 0) > 0) schedule(key, k, IDLE_DISPATCH_MS);
      else if (!k.timer) keys.delete(key);
    } catch (e) {
      warn(`dispatching ${key}`, e);
      schedule(key, k, IDLE_DISPATCH_MS);
    } finally {
      k.running = false;
    }
    if (k.again) {
      k.again = false;
      await run(key, k);
    }
  };

  const entry = (key: string, limits: ProviderLimits) => {
    let k = keys.get(key);
    if (!k) keys.set(key, (k = { limits, running: false, again: false }));
    k.limits = limits;
    return k;
  };

  return {
    waiting(key, limits) {
      schedule(key, entry(key, limits), 0);
    },
    freed(key, limits) {
      // Its woken threads ask as soon as the slot has settled (RELEASE_SETTLE_MS: the provider closing the request).
      const ready = freeWaiters.get(key);
      if (ready) setTimeout(() => ready.forEach((go) => go()), RELEASE_SETTLE_MS).unref();
      // Whoever's threads wait: the freed capacity is this worker's to give (a dispatch that finds nobody is a read).
      schedule(key, entry(key, limits), 0);
    },
    nextFree(key, maxMs, signal) {
      return new Promise<void>((resolve) => {
        let set = freeWaiters.get(key);
        if (!set) freeWaiters.set(key, (set = new Set()));
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          set.delete(done);
          if (set.size === 0) freeWaiters.delete(key);
          resolve();
        };
        const timer = setTimeout(done, maxMs);
        set.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    close() {
      closed = true;
      for (const k of keys.values()) if (k.timer) clearTimeout(k.timer);
      keys.clear();
    },
  };
}
