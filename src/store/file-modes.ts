/**
 * Private files and directories for what holds conversations (security item 15): a store's data directory is created
 * 0700 and its files 0600, whatever the process's umask, so other users of the machine cannot read them. SQLite's unix
 * VFS gives the `-wal` and `-shm` files the mode of their database file, so creating the database file private is
 * enough for all three. Existing files and directories keep their modes: they may be shared on purpose.
 */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Owner only: read, write, search. */
export const PRIVATE_DIR_MODE = 0o700;
/** Owner only: read and write. */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `dir` and any missing parents 0700 (set explicitly after creation: `mkdir`'s mode is filtered by the umask).
 * A directory that exists already is left as it is.
 */
export function ensurePrivateDir(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (first === undefined) return; // nothing created
  // From the deepest created directory up to the first one created: each of them is ours.
  const top = resolve(first);
  for (let d = resolve(dir); ; d = dirname(d)) {
    chmodSync(d, PRIVATE_DIR_MODE);
    if (d === top || dirname(d) === d) break;
  }
}

/**
 * Creates `file` empty and 0600 unless it exists (then it is left as it is). Returns whether it created it. Exclusive
 * creation: never truncates or takes over a file another process made meanwhile.
 */
export function createPrivateFile(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE); // the open's mode went through the umask
  } finally {
    closeSync(fd);
  }
  return true;
}
