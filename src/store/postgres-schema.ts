/**
 * The PostgreSQL store's schema: an append-only list of migrations, and the code that applies the missing ones under a
 * database-wide advisory lock, so that workers starting at once against one database never race.
 */
import type { Pool } from 'pg';
import { budgetMigration, modelSpendMigration } from './postgres-budgets';
import { capacityMigration } from './postgres-capacity';
import { scoresMigration } from './postgres-evals';
import { inTransaction } from './postgres-tx';

/** A schema-qualified, quoted table name. */
export type TableName = (table: string) => string;

/** `"schema"."table"`; the schema name is checked when the store is made, so quoting needs no escaping. */
export const tablesIn =
  (schema: string): TableName =>
  (table) =>
    `"${schema}"."${table}"`;

/** Schema names the store accepts: plain identifiers, so they can be quoted as they are. */
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Key of the advisory lock migrations run under (`pg_advisory_xact_lock(bigint)`): any fixed number, chosen at random
 * once. It is database-wide, so stores in different schemas of one database migrate one after the other (harmless).
 */
const MIGRATION_LOCK_KEY = '7310596411852204609';

/**
 * Schema migrations, applied in order; `infinity_schema_version` records how many ran. Append only: a released
 * migration is never edited, a change is a new one.
 *
 * Why the columns are what they are:
 * - JSON (items, slice results) is `text`, not `jsonb`: `jsonb` reorders keys and rewrites numbers, so items would not
 *   come back byte for byte as they went in (and as the SQLite store returns them), and it refuses `\u0000`, which
 *   `JSON.stringify` writes for a NUL character in a tool's output. Nothing queries inside the JSON.
 * - `items.call_id` is the id of a tool call item (else null), set at commit: `findToolCall` is an index lookup
 *   instead of parsing every item of the thread.
 * - `summaries.seq` orders summaries by first save: an upsert from the same source keeps its row's `seq`, exactly as
 *   the SQLite store's upsert keeps its rowid, so "latest" means the same in both.
 * - No foreign keys: a commit does not require its thread record (neither store does).
 */
export const MIGRATIONS: readonly ((t: TableName) => string)[] = [
  (t) => `
    CREATE TABLE ${t('threads')} (
      thread_id text PRIMARY KEY,
      kind text NOT NULL,
      parent_thread_id text,
      root_thread_id text NOT NULL,
      spawn_order integer,
      spawn_tool_call_id text,
      closed boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX ON ${t('threads')} (parent_thread_id);
    CREATE TABLE ${t('items')} (
      thread_id text NOT NULL,
      position integer NOT NULL,
      message_id text NOT NULL,
      slice_id text NOT NULL,
      call_id text,
      item text NOT NULL,
      PRIMARY KEY (thread_id, position)
    );
    CREATE INDEX ON ${t('items')} (thread_id, call_id) WHERE call_id IS NOT NULL;
    CREATE TABLE ${t('slices')} (
      thread_id text NOT NULL,
      slice_id text NOT NULL,
      result text NOT NULL,
      committed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (thread_id, slice_id)
    );
    CREATE TABLE ${t('summaries')} (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      thread_id text NOT NULL,
      source_thread_id text NOT NULL,
      up_to integer NOT NULL,
      summary text NOT NULL,
      UNIQUE (thread_id, source_thread_id)
    );
    CREATE INDEX ON ${t('summaries')} (thread_id, seq);
    CREATE TABLE ${t('staged_inputs')} (
      id text PRIMARY KEY,
      sha256 text NOT NULL,
      bytes integer NOT NULL,
      data bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );`,
  budgetMigration,
  forkBaseMigration,
  capacityMigration,
  scoresMigration,
  archivedMigration,
  modelSpendMigration,
];

/**
 * Rewinds (issue 28 §2): the ranges of a thread's own items they archived, as JSON text (`[[from, to], ...]`), read and
 * written whole with the record. Nullable, no default: added without rewriting the table.
 */
function archivedMigration(t: TableName): string {
  return `ALTER TABLE ${t('threads')} ADD COLUMN archived text;`;
}

/**
 * Forks (issue 28 §1): a thread record may name the thread and point its history starts from. Nullable columns with no
 * default: PostgreSQL adds them without rewriting the table, and a fork adds one row and no items.
 */
function forkBaseMigration(t: TableName): string {
  return `ALTER TABLE ${t('threads')} ADD COLUMN base_thread_id text, ADD COLUMN base_up_to integer;`;
}

/**
 * Brings the schema up to date: in one transaction, under the migration lock, creates the schema and the version
 * table when missing, then applies the migrations after the recorded count. Whoever gets the lock second finds the
 * work done. PostgreSQL's DDL is transactional, so a failed migration leaves nothing half applied.
 * @returns the schema version now in place
 */
export async function migrateSchema(
  pool: Pool,
  schema: string,
  migrations: readonly ((t: TableName) => string)[] = MIGRATIONS,
): Promise<number> {
  const t = tablesIn(schema);
  return inTransaction(pool, async (c) => {
    await c.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    // Looked up rather than created IF NOT EXISTS, which needs the CREATE privilege even when there is nothing to do:
    // a role that may only read and write rows can open an up-to-date store. (Without the lock, two sessions creating
    // the same table at once would also fail, on a catalog index.)
    const version = t('infinity_schema_version');
    const found = await c.query<{ schema: boolean; table: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema, to_regclass($2) IS NOT NULL AS table',
      [schema, version],
    );
    if (!found.rows[0]!.schema) await c.query(`CREATE SCHEMA "${schema}"`);
    if (!found.rows[0]!.table) await c.query(`CREATE TABLE ${version} (version integer NOT NULL)`);
    const { rows } = await c.query<{ version: number }>(`SELECT version FROM ${version}`);
    const applied = rows[0]?.version ?? 0;
    // A schema newer than this code (a later release migrated it, then this one was rolled back to) is used as it is,
    // as the SQLite store does: migrations only add.
    if (applied >= migrations.length) return applied;
    for (let v = applied; v < migrations.length; v++) await c.query(migrations[v]!(t));
    if (rows.length === 0) await c.query(`INSERT INTO ${version} (version) VALUES ($1)`, [migrations.length]);
    else await c.query(`UPDATE ${version} SET version = $1`, [migrations.length]);
    return migrations.length;
  });
}
