/**
 * PostgreSQL for tests: the run's server comes from global setup (`postgresUrl`: a throwaway local server, or the one
 * named by INFINITY_TEST_POSTGRES_URL, whose role must be allowed to create databases). Each test file makes its own
 * database, so files running in parallel never see each other's tables or advisory locks' effects. The databases'
 * names start with the run's prefix; global teardown drops them from a server that outlives the run.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/** The URL of `url`'s server with another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Creates a new, empty database on the run's server; returns its URL. */
export async function createTestDatabase(prefix: string): Promise<string> {
  const name =
    `${inject('postgresDatabasePrefix')}${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`.toLowerCase();
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`test database name '${name}': use letters, digits and _`);
  const server = inject('postgresUrl');
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return withDatabase(server, name);
}

/** Runs one query on `url` with a connection of its own (checks behind a store's back). */
export async function queryOnce<R extends object>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}
