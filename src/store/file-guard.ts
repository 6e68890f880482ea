/**
 * A SQLite connection keeps writing into its files after they are unlinked or renamed over: every commit "succeeds"
 * into an inode nobody will open again, and the loss shows up only after a restart, as commit conflicts on every
 * thread. Worse, after the database file is replaced (a restore under a running worker), the old connection's commits
 * still go to the `-wal` file at the path, which SQLite applies to the new file when it next opens it. The guard
 * remembers which files (device + inode) the store opened and compares the paths against them before every write, so
 * a lost file fails loudly instead.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';

export type StoreFileRole = 'database' | 'write-ahead log' | 'shared-memory index';
export type StoreFileChange = 'removed' | 'replaced';

interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/** Device and inode of what the path names now; bigint because 64-bit inode numbers exceed a double's precision. */
export function fileIdentity(path: string): FileIdentity | undefined {
  const s = statSync(path, { bigint: true, throwIfNoEntry: false });
  return s && { dev: s.dev, ino: s.ino };
}

const same = (a: FileIdentity, b: FileIdentity) => a.dev === b.dev && a.ino === b.ino;

function lostMessage(database: string, path: string, role: StoreFileRole, change: StoreFileChange): string {
  const how = change === 'removed' ? 'was removed' : 'was replaced by another file';
  const help = 'see "Backup and restore" in the README';
  if (role === 'database') {
    const fix =
      change === 'removed'
        ? `restore it from a backup (first removing any stale ${database}-wal and -shm)`
        : 'make sure the file now there is the store you want (a restored backup)';
    return (
      `conversation store ${database} ${how} while this process had it open: commits would go to a file nobody reads again, ` +
      `so none is made. Stop the workers, ${fix}, and start them again (${help})`
    );
  }
  // Verified: closing the connection checkpoints what the unlinked log holds into the database file.
  return (
    `the ${role} ${path} of conversation store ${database} ${how} while this process had it open: other processes no ` +
    `longer see this one's commits, so none is made. Stop the workers cleanly (closing writes what this process holds ` +
    `into ${database}) and start them again (${help})`
  );
}

/**
 * A store file was removed or replaced under an open store. An `ApplicationFailure` marked non-retryable: a slice
 * retried in this process would meet the same dead file, so the thread gets the error in `status().lastError` at once
 * instead of after the activity's retries; its failed slice is retried, under the same id, with its next input.
 */
export class StoreFileLostError extends ApplicationFailure {
  override readonly name = 'StoreFileLostError';
  constructor(
    /** The store's database file. */
    readonly database: string,
    /** The file that was lost: the database or its `-wal` / `-shm` companion. */
    readonly path: string,
    readonly role: StoreFileRole,
    readonly change: StoreFileChange,
  ) {
    super(lostMessage(database, path, role, change), 'StoreFileLostError', true);
  }
}

const COMPANIONS: readonly [string, StoreFileRole][] = [
  ['', 'database'],
  ['-wal', 'write-ahead log'],
  ['-shm', 'shared-memory index'],
];

/** The files of one open SQLite database in WAL mode, as they were when it was opened. */
export class StoreFileGuard {
  private readonly files: { path: string; role: StoreFileRole; id: FileIdentity }[] = [];

  /**
   * Call right after opening (and migrating, which creates the WAL companions). `before` is what the path named just
   * before the open: if that file was replaced while the store opened, the store would hold the wrong one.
   */
  constructor(
    readonly database: string,
    before: FileIdentity | undefined,
  ) {
    const base = resolve(database); // SQLite resolved the path at open; a later chdir must not move it
    for (const [suffix, role] of COMPANIONS) {
      const path = base + suffix;
      const id = fileIdentity(path);
      // The companions exist for as long as a connection is open in WAL mode; without them there is nothing to watch.
      if (!id) {
        if (role === 'database') throw new StoreFileLostError(database, path, role, 'removed');
        continue;
      }
      if (role === 'database' && before && !same(before, id))
        throw new StoreFileLostError(database, path, role, 'replaced');
      this.files.push({ path, role, id });
    }
  }

  /** Throws {@link StoreFileLostError} unless every file is still the one that was opened (three `stat`s, ~10 µs). */
  check(): void {
    for (const f of this.files) {
      const now = fileIdentity(f.path);
      if (!now || !same(now, f.id))
        throw new StoreFileLostError(this.database, f.path, f.role, now ? 'replaced' : 'removed');
    }
  }
}
