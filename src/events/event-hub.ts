/**
 * In-process fan-out of live thread events from slices to subscribers (clients in the same process).
 */
import type { ThreadEvent } from '../core/types';

export type ThreadEventListener = (event: ThreadEvent) => void;

export class LocalEventHub {
  private readonly byThread = new Map<string, Set<ThreadEventListener>>();
  private readonly all = new Set<ThreadEventListener>();

  emit(event: ThreadEvent): void {
    for (const l of this.all) l(event);
    for (const l of this.byThread.get(event.threadId) ?? []) l(event);
  }

  /** Subscribes to one thread, or to every thread when `threadId` is undefined. Returns the unsubscribe function. */
  subscribe(threadId: string | undefined, listener: ThreadEventListener): () => void {
    if (threadId === undefined) {
      this.all.add(listener);
      return () => this.all.delete(listener);
    }
    let set = this.byThread.get(threadId);
    if (!set) this.byThread.set(threadId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.byThread.delete(threadId);
    };
  }
}
