/**
 * The recent live events of a worker, numbered, so that a client in another process can attach late (replay, then
 * live) and reconnect without losing or repeating an event. Bounded: a ring of the most recent events across all
 * threads; idle threads hold nothing here.
 */
import { randomUUID } from 'node:crypto';
import type { ThreadEvent } from '../core/types';
import type { LocalEventHub } from './event-hub';

/** An event with its position in this worker's log: `<epoch>.<seq>`. */
export interface LoggedEvent {
  id: string;
  event: ThreadEvent;
}

export type LoggedEventListener = (e: LoggedEvent) => void;

/** What a subscriber gets first: the events it missed, or a note that some are gone from the ring. */
export interface Replay {
  events: LoggedEvent[];
  /** The requested position is older than the ring (or from an earlier worker): committed history must fill the gap. */
  gap: boolean;
}

export class EventLog {
  /** Changes at every worker start: positions of a previous worker are never mistaken for ours. */
  readonly epoch = randomUUID().slice(0, 8);
  private readonly ring: { seq: number; event: ThreadEvent }[] = [];
  private seq = 0;
  private readonly listeners = new Map<string, Set<LoggedEventListener>>();

  constructor(
    hub: LocalEventHub,
    private readonly capacity = 10_000,
  ) {
    hub.subscribe(undefined, (e) => this.append(e));
  }

  private append(event: ThreadEvent): void {
    const seq = ++this.seq;
    this.ring.push({ seq, event });
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity);
    const logged = { id: `${this.epoch}.${seq}`, event };
    for (const l of this.listeners.get(event.threadId) ?? []) l(logged);
  }

  private logged(threadId: string, afterSeq: number): LoggedEvent[] {
    return this.ring
      .filter((r) => r.seq > afterSeq && r.event.threadId === threadId)
      .map((r) => ({ id: `${this.epoch}.${r.seq}`, event: r.event }));
  }

  /**
   * Subscribes to a thread. With `after` (an id this log handed out), the replay holds every later event of the
   * thread; without it, the events of the slice now running (a late attacher sees the turn so far). Replay and
   * live events never overlap: both happen synchronously here, before any new event is appended.
   */
  subscribe(
    threadId: string,
    after: string | undefined,
    listener: LoggedEventListener,
  ): { replay: Replay; unsubscribe: () => void } {
    const replay = this.replay(threadId, after);
    let set = this.listeners.get(threadId);
    if (!set) this.listeners.set(threadId, (set = new Set()));
    set.add(listener);
    return {
      replay,
      unsubscribe: () => {
        set.delete(listener);
        if (set.size === 0) this.listeners.delete(threadId);
      },
    };
  }

  /**
   * `after` is an event id, or several joined by `~` (a client following several workers keeps one position per
   * worker): the one with this log's epoch counts. None of ours (an earlier worker's, or only other workers') means
   * we cannot know what the client saw: a gap, which sends it to the committed history, then what a new subscriber
   * gets (the slice now running). Never the whole buffered past: an `after` anyone can make up must not reach further
   * back than no `after` at all.
   */
  private replay(threadId: string, after: string | undefined): Replay {
    if (after !== undefined && after !== '') {
      const mine = after.split('~').find((id) => id.split('.')[0] === this.epoch);
      const seq = Number(mine?.split('.')[1]);
      const oldest = this.ring[0]?.seq ?? this.seq + 1;
      if (mine && Number.isSafeInteger(seq)) return { events: this.logged(threadId, seq), gap: seq < oldest - 1 };
      return { events: this.runningSlice(threadId), gap: true };
    }
    return { events: this.runningSlice(threadId), gap: false };
  }

  /**
   * The events of the thread's slice in progress, from its `status: running` (then its appended inputs); none between
   * slices, and none when the ring no longer holds the slice's start (a follower reads that slice from the store).
   */
  private runningSlice(threadId: string): LoggedEvent[] {
    const all = this.logged(threadId, 0);
    let start = -1;
    for (let i = all.length - 1; i >= 0 && start < 0; i--) {
      const e = all[i]!.event;
      if (e.type === 'status' && e.status === 'running') start = i;
    }
    const running = start >= 0 && !all.slice(start).some((e) => e.event.type === 'completion_finished');
    return running ? all.slice(start) : [];
  }
}

/**
 * Is `after` shaped like what {@link EventLog} hands out: `<epoch>.<seq>`, or several joined by `~` (one per worker)?
 * Lenient on the epoch's letters (ids of other releases), strict on the shape and the sizes.
 */
export function isEventCursor(after: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}\.\d{1,15}(~[A-Za-z0-9_-]{1,64}\.\d{1,15}){0,255}$/.test(after);
}
