/** `backup <dest>`: a consistent copy of the conversation store, taken while workers go on writing to it. */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { BackupDestinationError, checkBackupDestination } from '../../store/sqlite-backup';
import type { Out } from '../format';
import { sqliteStore, storeOpen } from '../lazy';
import { CliError } from '../errors';
import { storePathOf, type TargetFlags } from '../target';

export function registerBackup(program: Command, out: Out): void {
  program
    .command('backup')
    .description('copy the conversation store to a new file, safely while workers run (SQLite online backup)')
    .argument('<dest>', 'the new file (must not exist)')
    .action(async (dest: string, _opts: unknown, cmd: Command) => {
      const file = storePathOf(cmd.optsWithGlobals<TargetFlags>());
      if (!file)
        throw new CliError(
          'backup copies the conversation store: pass --store <sqlite file> (or set INFINITY_STORE, or run next to `dev`)',
        );
      // The stores (SQLite, PostgreSQL) load here, not when the program starts (see lazy.ts).
      const { describeStore, isPostgresUrl } = storeOpen();
      if (isPostgresUrl(file)) {
        throw new CliError(
          `backup copies a SQLite store; ${describeStore(file)} is a PostgreSQL database: back it up with pg_dump ` +
            '(e.g. `pg_dump --format=custom --file=conversations.dump <url>`), or with the backups your PostgreSQL service runs',
        );
      }
      if (!existsSync(file)) throw new CliError(`no conversation store at ${file}`);
      // Before the store opens: nothing is read for a destination that cannot be used.
      try {
        checkBackupDestination(dest);
      } catch (e) {
        throw usage(e);
      }
      // Read-only: a backup must not migrate or otherwise write the store it copies.
      const { SqliteConversationStore } = sqliteStore();
      const store = new SqliteConversationStore(file, { readonly: true });
      try {
        await store.backup(dest);
      } catch (e) {
        throw usage(e);
      } finally {
        await store.close();
      }
      out(`backed up ${file} to ${dest}`);
    });
}

/** A destination the backup cannot use is a usage error (exit 2) that says why; other errors pass as they are. */
const usage = (e: unknown): unknown => (e instanceof BackupDestinationError ? new CliError(e.message) : e);
