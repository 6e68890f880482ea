/** Typed errors of the client API: each says what was wrong and changes nothing on the thread. */

/** A non-user input was addressed to a thread that does not exist (inputs other than user text never create one). */
export class ThreadNotFoundError extends Error {
  override readonly name = 'ThreadNotFoundError';
  constructor(readonly threadId: string) {
    super(`thread '${threadId}' does not exist`);
  }
}

/** User text was sent to a thread that has been closed. */
export class ThreadClosedError extends Error {
  override readonly name = 'ThreadClosedError';
  constructor(readonly threadId: string) {
    super(`thread '${threadId}' is closed and accepts no input`);
  }
}

/** An input message is malformed. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(readonly reason: string) {
    super(`invalid input: ${reason}`);
  }
}

/** An input message is larger than the configured limit (Temporal payloads are not the place for large blobs). */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`input of ${bytes} bytes exceeds the limit of ${limit} bytes`);
  }
}

/** A wait on a thread did not finish in time. */
export class ThreadTimeoutError extends Error {
  override readonly name = 'ThreadTimeoutError';
  constructor(
    readonly threadId: string,
    readonly what: string,
    readonly ms: number,
  ) {
    super(`thread '${threadId}': ${what} did not happen within ${ms} ms`);
  }
}

/**
 * The thread refused inputs for longer than the sender would wait: a flood filled its current run and the run has not
 * yet moved on (see `inbox/busy.ts`). Nothing was stored; sending again later (same id) is safe.
 */
export class ThreadBusyError extends Error {
  override readonly name = 'ThreadBusyError';
  readonly retryable = true;
  constructor(
    readonly threadId: string,
    readonly waitedMs: number,
  ) {
    super(
      `thread '${threadId}' refused the input for ${waitedMs} ms (its run reached Temporal's signal limit); try again`,
    );
  }
}

/** The Temporal server could not be reached (or did not answer in time). Nothing was changed; try again. */
export class TemporalUnavailableError extends Error {
  override readonly name = 'TemporalUnavailableError';
  readonly retryable = true;
  constructor(cause: unknown) {
    super(`the Temporal server is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
