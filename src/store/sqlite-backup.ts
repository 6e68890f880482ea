/** Online backup of an open SQLite database to a new file (`SqliteConversationStore.backup`). */
import { existsSync, renameSync, rmSync } from 'node:fs';
import type Database from 'better-sqlite3';

/**
 * SQLite's online backup: one consistent snapshot, while writers in WAL mode go on. Written under
 * `<destination>.partial` and renamed, so the destination is complete or absent.
 */
export async function backupDatabase(db: Database.Database, destination: string): Promise<void> {
  if (existsSync(destination)) throw new Error(`backup destination ${destination} exists; name a new file`);
  const partial = `${destination}.partial`;
  rmSync(partial, { force: true });
  try {
    // One step: copied in steps, the backup starts over whenever another process commits between them.
    await db.backup(partial, { progress: () => 0x7fffffff });
  } catch (e) {
    rmSync(partial, { force: true });
    throw e;
  }
  renameSync(partial, destination);
}
