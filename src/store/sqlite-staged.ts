/**
 * The SQLite store's staged inputs (`core/staged.ts`): large inputs wait here, as blobs, for the slice that commits
 * them; that commit removes them in its own transaction.
 */
import type Database from 'better-sqlite3';
import type { StagedRef } from '../core/types';
import { newStagedRef } from './staged-blobs';

/** Migration 4. `created_at` lets an operator find inputs no thread took (dropped as duplicates, say). */
export const STAGED_INPUTS_MIGRATION = `CREATE TABLE staged_inputs (
     id TEXT PRIMARY KEY,
     sha256 TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     data BLOB NOT NULL,
     created_at INTEGER NOT NULL
   );`;

export class SqliteStagedInputs {
  // Prepared on first use: a read-only store may sit on a file from before migration 4.
  private stmts?: {
    insert: Database.Statement<[string, string, number, Buffer, number]>;
    load: Database.Statement<[string], { data: Buffer }>;
    remove: Database.Statement<[string]>;
  };

  constructor(private readonly db: Database.Database) {}

  private get s() {
    return (this.stmts ??= {
      insert: this.db.prepare('INSERT INTO staged_inputs (id, sha256, bytes, data, created_at) VALUES (?, ?, ?, ?, ?)'),
      load: this.db.prepare('SELECT data FROM staged_inputs WHERE id = ?'),
      remove: this.db.prepare('DELETE FROM staged_inputs WHERE id = ?'),
    });
  }

  stage(data: Uint8Array): StagedRef {
    const ref = newStagedRef(data);
    this.s.insert.run(
      ref.id,
      ref.sha256,
      ref.bytes,
      Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      Date.now(),
    );
    return ref;
  }

  load(ref: StagedRef): Uint8Array | undefined {
    return this.s.load.get(ref.id)?.data;
  }

  /** Inside the caller's transaction when there is one (a commit). */
  remove(ids: readonly string[]): void {
    for (const id of ids) this.s.remove.run(id);
  }
}
