/**
 * Following a thread: its committed history, then its live events, joined so that nothing committed is missed and
 * nothing is shown twice, however the two race.
 *
 * The live stream is subscribed first, the history read second: whatever commits after the read still reaches the
 * stream. Slices say where they stand: a slice's events run from its `status: running` through its inputs to
 * `completion_started { at }` (the committed length it builds on) and `completion_finished { length }` (the length
 * after its commit). So the seam keeps `shown`, the committed length shown so far, and per slice:
 * - `at < shown`: the slice is in the history already read; its events are dropped;
 * - `at > shown`: something committed without live events in between (a rewind, a slice whose start the stream no
 *   longer held): those items come from the store first;
 * - a slice seen without its start (the worker's buffer dropped it): its events are dropped and its items come from
 *   the store once it ends.
 * A worker of an older release sends neither position: its slices pass through as they come. A slice attempt that
 * dies before its commit is shown as far as it got; its retry starts again with `status: running` (a view that renders
 * turns replaces the unfinished one).
 */
import type { HistoryItem, StoredItem } from '../core/types';
import type { LiveEvent } from '../events/live-events';

/** What a follow yields: a committed item (`{ history }`), or a live event. */
export type Followed = { history: HistoryItem } | LiveEvent;

/** What a follow reads from: a live stream it can tell is subscribed, and the committed items of the thread. */
export interface FollowSource {
  /** The live events; `onSubscribed` once every later event is sure to arrive; ends when `signal` aborts. */
  events(onSubscribed: () => void, signal: AbortSignal): AsyncIterator<LiveEvent>;
  /** Visible committed items from position `from` up to `to` (default: all), and the position they reach. */
  committed(from: number, to?: number): Promise<{ items: StoredItem[]; length: number }>;
}

export interface FollowOptions {
  /**
   * Yield the committed history first; without it, the follow starts at the end of what is committed.
   * @default true
   */
  history?: boolean;
  /** Ends the follow (the generator returns) when aborted, even while it waits for the next event. */
  signal?: AbortSignal;
}

/** Events that belong to a slice: seen without the slice's start, they cannot be placed. */
const SLICE_EVENTS = new Set<LiveEvent['type']>([
  'completion_started',
  'text_delta',
  'thinking_started',
  'thinking_delta',
  'thinking_ended',
  'tool_call',
  'completion_finished',
]);
/** The inputs a slice announces before its model call (before `running`, from workers of 0.11 and earlier). */
const INPUT_EVENTS = new Set<LiveEvent['type']>(['user_input', 'tool_result', 'event']);

/** What the seam asks for: show an event, or first read committed items up to `to` (undefined: all). */
export type SeamStep = { show: LiveEvent } | { catchUp: number | undefined };

/**
 * The seam between shown history and live events (pure: no I/O). `take` each live event in order; carry out the
 * steps it returns in order, telling it `caughtUp(length)` after each catch-up.
 */
export class FollowSeam {
  private mode: 'between' | 'held' | 'live' | 'skip' | 'orphan' = 'between';
  private held: LiveEvent[] = [];

  constructor(
    /** The committed length shown so far. */
    public shown: number,
  ) {}

  caughtUp(length: number): void {
    this.shown = Math.max(this.shown, length);
  }

  take(e: LiveEvent): SeamStep[] {
    if (e.type === 'replay_gap') {
      // Events were lost: the store has whatever they showed that committed (read first, so a consumer that stops
      // at the gap has seen all of it).
      this.mode = 'between';
      this.held = [];
      return [{ catchUp: undefined }, { show: e }];
    }
    if (e.type === 'status' && e.status === 'running') {
      const dropped = this.mode === 'held' ? this.heldInputsOfOlderWorker() : [];
      this.mode = 'held';
      this.held = [...dropped, e];
      return [];
    }
    switch (this.mode) {
      case 'between':
        if (INPUT_EVENTS.has(e.type)) {
          this.mode = 'held';
          this.held = [e];
          return [];
        }
        if (!SLICE_EVENTS.has(e.type)) return [{ show: e }];
        this.mode = 'orphan';
        return this.orphan(e);
      case 'held':
        return this.fromHeld(e);
      case 'live':
        if (e.type === 'completion_finished') {
          this.mode = 'between';
          if (e.length !== undefined) this.caughtUp(e.length);
        }
        return [{ show: e }];
      case 'skip':
        if (e.type === 'completion_finished') {
          this.mode = 'between';
          if (e.length !== undefined) this.caughtUp(e.length);
          return [];
        }
        // A slice that ended without finishing (it failed; a retry starts with `running`): what follows is shown.
        if (e.type === 'status') {
          this.mode = 'between';
          return [{ show: e }];
        }
        return [];
      case 'orphan':
        return this.orphan(e);
    }
  }

  /** Held events: a slice's start, its inputs, until its `completion_started` says where it builds. */
  private fromHeld(e: LiveEvent): SeamStep[] {
    if (e.type === 'completion_started') {
      const held = this.held;
      this.held = [];
      if (e.at === undefined) {
        this.mode = 'live';
        return [...held, e].map((show) => ({ show }));
      }
      if (e.at < this.shown) {
        this.mode = 'skip';
        return [];
      }
      this.mode = 'live';
      const steps: SeamStep[] = e.at > this.shown ? [{ catchUp: e.at }] : [];
      return [...steps, ...[...held, e].map((show) => ({ show }))];
    }
    if (SLICE_EVENTS.has(e.type) || e.type === 'status') {
      // Not the start of a slice after all (inputs seen mid-slice): the slice's items come from the store.
      this.held = [];
      this.mode = 'orphan';
      return this.orphan(e);
    }
    this.held.push(e);
    return [];
  }

  /** A slice seen without its start: dropped, then read from the store once it ends. */
  private orphan(e: LiveEvent): SeamStep[] {
    if (e.type === 'completion_finished') {
      this.mode = 'between';
      return [{ catchUp: e.length }];
    }
    if (e.type === 'status') {
      this.mode = 'between';
      return [{ catchUp: undefined }, { show: e }];
    }
    return SLICE_EVENTS.has(e.type) || INPUT_EVENTS.has(e.type) ? [] : [{ show: e }];
  }

  /** Inputs held before a `running` came from a worker that announces them first (0.11 and earlier): kept. */
  private heldInputsOfOlderWorker(): LiveEvent[] {
    return this.held.every((h) => INPUT_EVENTS.has(h.type)) ? this.held : [];
  }
}

/** Follows a thread from `source`; see the module comment for how history and live events are joined. */
export async function* followThread(source: FollowSource, options: FollowOptions = {}): AsyncGenerator<Followed> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  if (options.signal?.aborted) return;
  options.signal?.addEventListener('abort', abort, { once: true });
  let subscribed!: () => void;
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  const events = source.events(subscribed, stop.signal);
  let next = events.next();
  try {
    // A refusal (or a stream that ends) settles `next` instead: it is awaited below, which throws it.
    await Promise.race([ready, next]);
    if (stop.signal.aborted) return;
    const start = await source.committed(0);
    if (options.history !== false) for (const s of start.items) yield { history: s.item };
    const seam = new FollowSeam(start.length);
    for (;;) {
      const r = await next;
      if (r.done) return;
      for (const step of seam.take(r.value)) {
        if ('show' in step) {
          yield step.show;
          continue;
        }
        if (step.catchUp !== undefined && step.catchUp <= seam.shown) continue;
        const caught = await source.committed(seam.shown, step.catchUp);
        for (const s of caught.items) yield { history: s.item };
        seam.caughtUp(caught.length);
      }
      next = events.next();
    }
  } finally {
    options.signal?.removeEventListener('abort', abort);
    stop.abort();
    // The pending read settles once aborted; then the stream can close.
    await next.catch(() => undefined);
    await events.return?.(undefined);
  }
}
