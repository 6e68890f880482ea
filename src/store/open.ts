/** One string names a conversation store: a PostgreSQL URL, or a SQLite file. */
import type { PoolConfig } from 'pg';
import type { ConversationStore } from './conversation-store';
import { PostgresConversationStore } from './postgres';
import { isPostgresUrl, redactStoreUrl } from './redact';
import { SqliteConversationStore } from './sqlite';

export interface OpenStoreOptions {
  /**
   * SQLite: open without write access (no migration either). A PostgreSQL store ignores it: what a process may write
   * there is for the database's roles to say.
   * @default false
   */
  readonly?: boolean;
  /** See `SqliteStoreOptions.itemCacheBytes` / `PostgresStoreOptions.itemCacheBytes`. @default 32 MiB */
  itemCacheBytes?: number;
  /** PostgreSQL only: more pool settings (`max`, `ssl`, ...). */
  pool?: Omit<PoolConfig, 'connectionString'>;
  /** PostgreSQL only: the schema holding the tables. @default 'public' */
  schema?: string;
}

export { isPostgresUrl } from './redact';

/** The spec for display: a URL's password and secret query parameters replaced by `***` (see `./redact`). */
export const describeStore = (spec: string): string => redactStoreUrl(spec);

/**
 * The store a spec names: a `postgres://` or `postgresql://` URL opens a {@link PostgresConversationStore} (its
 * schema migrates on first use), anything else is the path of a {@link SqliteConversationStore} file.
 */
export function openConversationStore(spec: string, options: OpenStoreOptions = {}): ConversationStore {
  const { readonly, itemCacheBytes, pool, schema } = options;
  if (isPostgresUrl(spec)) {
    return new PostgresConversationStore({
      connectionString: spec,
      ...(schema !== undefined && { schema }),
      ...(pool && { pool }),
      ...(itemCacheBytes !== undefined && { itemCacheBytes }),
    });
  }
  return new SqliteConversationStore(spec, {
    ...(readonly !== undefined && { readonly }),
    ...(itemCacheBytes !== undefined && { itemCacheBytes }),
  });
}
