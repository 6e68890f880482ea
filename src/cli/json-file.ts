/**
 * JSON files of commands: one a command was given (`eval --threads <file>`, `experiment run <file>`), read and parsed;
 * one it writes (`export --out <file>`), private.
 */
import { closeSync, constants, fchmodSync, fstatSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { PRIVATE_FILE_MODE } from '../store/file-modes';
import { CliError } from './errors';

/**
 * The parsed file: a {@link CliError} when it cannot be read, `notJson(message)` (the command's own typed error) when it
 * is not JSON; what the JSON holds is the caller's to check.
 */
export function readJsonFile(file: string, notJson: (message: string) => Error): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw notJson(`${file}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}

/**
 * Writes `text` to `file`, which ends 0600 (owner only) whether it was there or not: what is written quotes
 * conversations (issue 38, finding 9a). `writeFileSync`'s `mode` applies only to a file it creates; an existing file
 * kept its mode, 0644 say. The mode is set before the file is emptied and written, so the text is never readable by
 * others, and a file that cannot be made private (another user's) is left untouched: a {@link CliError}. What is not a
 * regular file (`/dev/stdout`, a pipe) is written as it is.
 */
export function writePrivateFile(file: string, text: string): void {
  let fd: number;
  try {
    // No O_TRUNC: nothing of an existing file changes before it is private.
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT, PRIVATE_FILE_MODE);
  } catch (e) {
    throw new CliError(`cannot write ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    if (fstatSync(fd).isFile()) {
      try {
        fchmodSync(fd, PRIVATE_FILE_MODE); // an existing file's mode, or a new one's after the umask
      } catch (e) {
        throw new CliError(
          `cannot make ${file} private (0600), so nothing was written to it: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
      ftruncateSync(fd, 0);
    }
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
  } finally {
    closeSync(fd);
  }
}
