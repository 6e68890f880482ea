/**
 * The records for evals (`test/eval-records-contract.ts`) for each store: in memory, a real SQLite file, a real
 * PostgreSQL database (a schema per store name).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryConversationStore } from '../src/store/memory';
import { PostgresConversationStore } from '../src/store/postgres';
import { SqliteConversationStore } from '../src/store/sqlite';
import { evalRecordsContract } from './eval-records-contract';
import { createTestDatabase } from './postgres';

const dir = mkdtempSync(join(tmpdir(), 'eval-store-'));
let database: Promise<string> | undefined;

evalRecordsContract('in-memory', () => new InMemoryConversationStore(), false);
evalRecordsContract('sqlite', (name) => new SqliteConversationStore(join(dir, `${name}.sqlite`)));
evalRecordsContract(
  'postgres',
  async (name) =>
    new PostgresConversationStore({ connectionString: await (database ??= createTestDatabase('evals')), schema: name }),
);
