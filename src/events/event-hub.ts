/**
 * In-process fan-out of live thread events from slices to subscribers (clients in the same process). It remembers the
 * events of each thread's slice in progress, so that a subscriber that attaches mid-slice can first get the slice so
 * far, as a late subscriber of the events endpoint does (event-log.ts).
 */
import type { ThreadEvent } from '../core/types';

export type ThreadEventListener = (event: ThreadEvent) => void;

/** Slices remembered at once (oldest forgotten first): a slice that failed for good never sends its end. */
const MAX_RUNNING_SLICES = 10_000;
/** Events remembered of one slice: a longer slice is not replayed (a follower then reads it from the store). */
const MAX_SLICE_EVENTS = 5_000;

export class LocalEventHub {
  private readonly byThread = new Map<string, Set<ThreadEventListener>>();
  private readonly all = new Set<ThreadEventListener>();
  /** Each thread's slice in progress: its events from its `status: running`. */
  private readonly running = new Map<string, ThreadEvent[]>();

  constructor(
    private readonly options: {
      /**
       * Remember each thread's slice in progress for late subscribers (`subscribe(id, l, { replay: true })`); off for
       * a hub that only feeds an `EventLog` (event-log.ts), which keeps its own.
       * @default true
       */
      remember?: boolean;
    } = {},
  ) {}

  emit(event: ThreadEvent): void {
    this.remember(event);
    for (const l of this.all) l(event);
    for (const l of this.byThread.get(event.threadId) ?? []) l(event);
  }

  /**
   * Subscribes to one thread, or to every thread when `threadId` is undefined. Returns the unsubscribe function.
   * With `replay`, the listener first gets the events of the thread's slice in progress, if one is running.
   */
  subscribe(
    threadId: string | undefined,
    listener: ThreadEventListener,
    options: { replay?: boolean } = {},
  ): () => void {
    if (threadId === undefined) {
      this.all.add(listener);
      return () => this.all.delete(listener);
    }
    // Synchronous with the subscription: no event can fall between the replay and the live ones.
    if (options.replay) for (const e of this.running.get(threadId) ?? []) listener(e);
    let set = this.byThread.get(threadId);
    if (!set) this.byThread.set(threadId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.byThread.delete(threadId);
    };
  }

  private remember(event: ThreadEvent): void {
    if (this.options.remember === false) return;
    const { threadId } = event;
    if (event.type === 'status') {
      this.running.delete(threadId);
      if (event.status !== 'running') return;
      this.running.set(threadId, [event]);
      if (this.running.size > MAX_RUNNING_SLICES) this.running.delete(this.running.keys().next().value!);
      return;
    }
    const slice = this.running.get(threadId);
    if (!slice) return;
    if (event.type === 'completion_finished' || slice.length >= MAX_SLICE_EVENTS) this.running.delete(threadId);
    else slice.push(event);
  }
}
