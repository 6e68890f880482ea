/**
 * The CLI's own error: a clear failure the user can act on (a bad flag, no server, an unknown thread); `main` prints
 * its message alone and exits 2. A module of its own that imports nothing, so that every part of the CLI can use it.
 */
export class CliError extends Error {
  override readonly name = 'CliError';
}
