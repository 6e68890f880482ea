/**
 * The PostgreSQL store's staged inputs (`core/staged.ts`): large inputs wait here, as `bytea`, for the slice that
 * commits them; that commit removes them in its own transaction. Ids and hashes as in every store (`./staged-blobs`).
 */
import type { Pool, PoolClient } from 'pg';
import type { StagedRef } from '../core/types';
import type { TableName } from './postgres-schema';
import { newStagedRef } from './staged-blobs';

export class PostgresStagedInputs {
  constructor(
    private readonly pool: Pool,
    private readonly t: TableName,
  ) {}

  async stage(data: Uint8Array): Promise<StagedRef> {
    const ref = newStagedRef(data);
    // A Buffer parameter goes to the server as binary, not as 2 hex characters a byte; no copy of the bytes either.
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    await this.pool.query(`INSERT INTO ${this.t('staged_inputs')} (id, sha256, bytes, data) VALUES ($1, $2, $3, $4)`, [
      ref.id,
      ref.sha256,
      ref.bytes,
      bytes,
    ]);
    return ref;
  }

  async load(ref: StagedRef): Promise<Uint8Array | undefined> {
    const { rows } = await this.pool.query<{ data: Buffer }>(
      `SELECT data FROM ${this.t('staged_inputs')} WHERE id = $1`,
      [ref.id],
    );
    return rows[0]?.data;
  }

  /** On `db`: a commit passes its transaction's connection, so the removal is part of it. */
  async remove(ids: readonly string[], db: Pool | PoolClient = this.pool): Promise<void> {
    if (ids.length === 0) return;
    await db.query(`DELETE FROM ${this.t('staged_inputs')} WHERE id = ANY($1::text[])`, [ids]);
  }
}
