/** Online backup of an open SQLite database to a new file (`SqliteConversationStore.backup`). */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { createPrivateFile } from './file-modes';

/** The destination is not somewhere a backup can go; the message names why (a usage error for the CLI). */
export class BackupDestinationError extends Error {
  override readonly name = 'BackupDestinationError';
}

/** Checks a destination before anything is copied: a new file in a directory that exists. */
export function checkBackupDestination(destination: string): void {
  if (existsSync(destination)) throw new BackupDestinationError(`${destination} exists; a backup goes to a new file`);
  const dir = dirname(destination);
  const s = statSync(dir, { throwIfNoEntry: false });
  if (!s) throw new BackupDestinationError(`the backup's directory ${dir} does not exist; create it first`);
  if (!s.isDirectory()) throw new BackupDestinationError(`the backup's directory ${dir} is not a directory`);
}

/**
 * SQLite's online backup: one consistent snapshot, while writers in WAL mode go on. Written under a temporary name of
 * its own (`<destination>.<random>.partial`, created exclusively and private) and linked into place, so the
 * destination is complete or absent, no file the backup did not create is ever removed or overwritten (not another
 * process's `<destination>.partial`, not a destination that appeared meanwhile), and the copy is readable by its owner
 * only, like the store.
 */
export async function backupDatabase(db: Database.Database, destination: string): Promise<void> {
  checkBackupDestination(destination);
  const partial = `${destination}.${randomBytes(6).toString('hex')}.partial`;
  // Exclusive: fails rather than reuse a file someone else made (a random name makes that all but impossible).
  if (!createPrivateFile(partial)) throw new Error(`${partial} exists; try the backup again`);
  try {
    // One step: copied in steps, the backup starts over whenever another process commits between them.
    await db.backup(partial, { progress: () => 0x7fffffff });
    publish(partial, destination);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST')
      throw new BackupDestinationError(`${destination} appeared while the backup ran; a backup goes to a new file`);
    throw e;
  } finally {
    rmSync(partial, { force: true });
    rmSync(`${partial}-journal`, { force: true });
  }
}

/** Puts the finished copy at `destination` without replacing a file that appeared there meanwhile. */
function publish(partial: string, destination: string): void {
  try {
    // A hard link fails if the destination exists by now, where a rename would replace it.
    linkSync(partial, destination);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // A file system without hard links: a rename after one more look is the best it allows.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw e;
    if (existsSync(destination)) throw Object.assign(new Error(`${destination} exists`), { code: 'EEXIST' });
    renameSync(partial, destination);
  }
}
