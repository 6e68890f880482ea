/** Kept apart from file.ts (which loads ajv through the tools): the CLI names this error at start-up. */

/** A file that is not an experiment this release reads: says which field is wrong. */
export class ExperimentFileError extends Error {
  override readonly name = 'ExperimentFileError';
}
