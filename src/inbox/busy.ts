/**
 * A thread under a flood of inputs can refuse more for a moment. Temporal caps the signals one workflow run accepts
 * (`history.maximumSignalsPerExecution`, 10,000 by default); a thread continues-as-new between slices once its run is
 * long, but under a continuous flood the new run can only begin when no signal arrives meanwhile — which the cap
 * brings about. A refused signal is not stored, so sending it again once the thread has moved to its next run is
 * exactly-once (inputs are deduplicated by id anyway).
 */
import { ThreadBusyError } from './errors';

const SIGNAL_LIMIT = /exceeded workflow execution limit for signal events/i;

/** Did the server refuse a signal because the run reached its signal cap? */
export function isSignalLimit(e: unknown): boolean {
  // The client wraps the server's answer: the text is on the ServiceError's cause.
  for (let err: unknown = e; err instanceof Error; err = err.cause) if (SIGNAL_LIMIT.test(err.message)) return true;
  return false;
}

/** Default time a send keeps trying while its thread refuses inputs; then {@link ThreadBusyError}. */
export const DEFAULT_BUSY_WAIT_MS = 60_000;

/** Runs `send`, again with backoff while the thread's run refuses signals, for at most `maxWaitMs`. */
export async function sendWhileBusy<T>(
  threadId: string,
  send: () => Promise<T>,
  maxWaitMs = DEFAULT_BUSY_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + maxWaitMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
    try {
      return await send();
    } catch (e) {
      if (!isSignalLimit(e)) throw e;
      if (Date.now() + delay > deadline) throw new ThreadBusyError(threadId, maxWaitMs);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
