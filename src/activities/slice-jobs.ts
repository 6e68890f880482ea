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
  /**
   * Awaited right before the commit: resolves when the slice may commit, throws when it must not (a handed-off job
   * that nobody adopted). Absent: commit at once.
   */
  commitGate?(): Promise<void>;
}

export class SliceJob implements SliceControl {
  private readonly controller = new AbortController();
  private interrupt = false;
  private expiry: ReturnType<typeof setTimeout> | undefined;
  /** `handed-off`: its local activity returned; it may commit only once an activity adopts it. */
  private stage: 'running' | 'handed-off' | 'adopted' | 'committing' = 'running';
  private adopted: (() => void) | undefined;
  private readonly adoption = new Promise<void>((resolve) => (this.adopted = resolve));
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

  /**
   * Marks the job handed off, unless it has already begun to commit (then its local activity waits for it instead).
   * Decided at one point in time, so a handed-off job never commits unadopted.
   */
  tryHandOff(): boolean {
    if (this.stage === 'committing') return false;
    this.stage = 'handed-off';
    return true;
  }

  /** An activity took the job over: it may commit. */
  markAdopted(): void {
    if (this.stage === 'handed-off') this.stage = 'adopted';
    this.adopted?.();
  }

  async commitGate(): Promise<void> {
    if (this.stage === 'handed-off') {
      const signal = this.controller.signal;
      const aborted = new Promise<void>((resolve) =>
        signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await Promise.race([this.adoption, aborted]);
      if (this.stage === 'handed-off') {
        throw new Error(`slice job abandoned before an activity adopted it: nothing committed`);
      }
    }
    this.stage = 'committing';
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
    job.markAdopted();
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
