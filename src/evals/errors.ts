/** The errors evals throw for bad input: each names what was wrong, so the CLI can say it and exit 2. */

/** A thread id the store has no record or history of. */
export class UnknownThreadError extends Error {
  override readonly name = 'UnknownThreadError';
  constructor(
    readonly threadId: string,
    where = 'the conversation store',
  ) {
    super(`thread ${threadId} is not in ${where}`);
  }
}

/** A slice named by number or id that the thread did not commit. */
export class UnknownSliceError extends Error {
  override readonly name = 'UnknownSliceError';
}

/** An exported thread file that is not one `exportThread` wrote (not JSON, another format, a missing field). */
export class MalformedExportError extends Error {
  override readonly name = 'MalformedExportError';
}

/** Eval options that cannot work together or are out of range (a negative `fromSlice`, no threads). */
export class EvalOptionError extends Error {
  override readonly name = 'EvalOptionError';
}
