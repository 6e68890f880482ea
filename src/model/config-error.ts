/**
 * The error of an unusable model string or environment. Its own module, with nothing imported, so that the CLI can
 * tell it apart (a usage error, exit 2) without loading the providers of src/model/registry.ts, which re-exports it.
 */

/** The model string or its environment is unusable; the message says what to set. */
export class ModelConfigError extends Error {
  override readonly name = 'ModelConfigError';
}
