/**
 * Slices in flight in this worker process, so a slice can outlive the activity that started it. A slice starts as a
 * local activity with a short budget (no activity events, no extra workflow task); one that streams past the budget is
 * handed to a regular activity on this worker's own task queue, which adopts the running job instead of starting the
 * completion again (decision 50). The job's abort says why it stopped: an interrupt commits what streamed, an abandon
 * commits nothing.
 */
import type { SliceResult } from '../core/slice-protocol';

/** What a running slice consults: its abort signal, and whether an abort is the workflow's interrupt. */
export interface SliceControl {
  readonly signal: AbortSignal;
  /** True when the abort is a user's interruption (commit the partial turn), false when the attempt is abandoned. */
  interruptRequested(): boolean;
}

export class SliceJob implements SliceControl {
  private readonly controller = new AbortController();
  private interrupt = false;
  private expiry: ReturnType<typeof setTimeout> | undefined;
  /** Settles with the slice; never an unhandled rejection, whoever awaits it. */
  readonly promise: Promise<SliceResult>;

  constructor(
    readonly key: string,
    run: (control: SliceControl) => Promise<SliceResult>,
  ) {
    this.promise = run(this);
    this.promise.catch(() => undefined);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  interruptRequested(): boolean {
    return this.interrupt;
  }

  /** Stops the slice; `interrupt` commits what it streamed. The first abort's kind counts. */
  abort(kind: 'interrupt' | 'abandon', reason: string): void {
    if (this.controller.signal.aborted) return;
    this.interrupt = kind === 'interrupt';
    this.controller.abort(new Error(reason));
  }

  /** @internal */
  expireAfter(ms: number, onExpire: () => void): void {
    this.expiry = setTimeout(onExpire, ms);
    this.expiry.unref?.();
  }

  /** @internal */
  keep(): void {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = undefined;
  }
}

export class SliceJobs {
  private readonly parked = new Map<string, SliceJob>();

  /**
   * @param adoptWithinMs how long a handed-off job waits for its adopting activity before it is abandoned (the
   * workflow then runs the slice afresh elsewhere; the commit is idempotent by slice id, so only the model call repeats).
   */
  constructor(private readonly adoptWithinMs = 60_000) {}

  static key(threadId: string, sliceId: string): string {
    return `${threadId}\u0000${sliceId}`;
  }

  start(key: string, run: (control: SliceControl) => Promise<SliceResult>): SliceJob {
    return new SliceJob(key, run);
  }

  /** Keeps a job that outlived its local activity until an activity adopts it. */
  park(job: SliceJob): void {
    this.parked.get(job.key)?.abort('abandon', 'replaced by a newer attempt of the same slice');
    this.parked.set(job.key, job);
    job.expireAfter(this.adoptWithinMs, () => {
      if (this.parked.get(job.key) !== job) return;
      this.parked.delete(job.key);
      job.abort('abandon', `no activity adopted the slice within ${this.adoptWithinMs} ms`);
    });
    // A finished job stays until adopted (its result is what the adopting activity returns) or until it expires.
  }

  /** The parked job under `key`, now owned by the caller. */
  adopt(key: string): SliceJob | undefined {
    const job = this.parked.get(key);
    if (!job) return undefined;
    this.parked.delete(key);
    job.keep();
    return job;
  }

  /** Abandons every parked job (worker shutdown). */
  abandonAll(reason: string): void {
    for (const job of this.parked.values()) {
      job.keep();
      job.abort('abandon', reason);
    }
    this.parked.clear();
  }
}
