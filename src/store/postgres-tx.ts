/** Transactions on a pooled connection, for the PostgreSQL store. */
import type { Pool, PoolClient } from 'pg';

/**
 * Runs `fn` in a READ COMMITTED transaction on one pooled connection: committed when it returns, rolled back when it
 * throws (the error is rethrown).
 *
 * READ COMMITTED is asked for explicitly, whatever the server's `default_transaction_isolation`: the store's
 * transactions take a lock first and then read, and only at READ COMMITTED does each statement see what was
 * committed before it began — under REPEATABLE READ the reads would use the snapshot taken before the lock was
 * granted, and miss the commit that was holding it.
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      // The connection is unusable (the server went away): it must not go back to the pool.
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw e;
  } finally {
    client.release(broken);
  }
}
