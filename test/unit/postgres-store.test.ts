/**
 * What only the PostgreSQL store has to show, against a real server: several "workers" (store instances, each with its
 * own pool) on one database — racing commits, racing migrations, a cache that another worker's commits or an outside
 * change cannot make wrong — and reopening a schema. The shared contract runs in `store.test.ts`.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { CommitConflictError, type ConversationStore } from '../../src/store/conversation-store';
import { PostgresConversationStore, type PostgresStoreOptions } from '../../src/store/postgres';
import { MIGRATIONS, migrateSchema } from '../../src/store/postgres-schema';
import pg from 'pg';
import { createTestDatabase, queryOnce, withDatabase } from '../postgres';
import { commitN, result, user } from '../store-contract';

let url: string;
let schemas = 0;
const opened: ConversationStore[] = [];

beforeAll(async () => {
  url = await createTestDatabase('pgstore');
});
afterAll(async () => {
  for (const s of opened) await s.close();
});

/** A store on this file's database: a new schema unless one is named. */
function open(options: Partial<PostgresStoreOptions> = {}): PostgresConversationStore {
  const s = new PostgresConversationStore({ connectionString: url, schema: `s_${++schemas}`, ...options });
  opened.push(s);
  return s;
}

/** `n` stores on one schema, migrated and connected, like workers that have run for a while. */
async function workers(n: number, options: Partial<PostgresStoreOptions> = {}): Promise<PostgresConversationStore[]> {
  const first = open(options);
  const all = [first, ...Array.from({ length: n - 1 }, () => open({ ...options, schema: first.schema }))];
  await Promise.all(all.map((s) => s.length('warm-up')));
  return all;
}

it('commits a slice once when two workers commit it at the same moment', async () => {
  const [a, b] = await workers(2);
  for (let n = 0; n < 10; n++) {
    const commit = (s: ConversationStore, text: string) =>
      s.commit({
        threadId: 't',
        sliceId: `s${n}`,
        expectedLength: n,
        items: [user(`m${n}`, text)],
        result: result(`s${n}`, n + 1),
      });
    const outcomes = await Promise.all([commit(a!, `a${n}`), commit(b!, `b${n}`)]);
    expect(outcomes.sort()).toEqual(['committed', 'duplicate']);
  }
  expect(await a!.length('t')).toBe(10);
  const rows = await queryOnce<{ n: string; slices: string }>(
    url,
    `SELECT (SELECT count(*) FROM "${a!.schema}".items WHERE thread_id = 't') AS n, (SELECT count(*) FROM "${a!.schema}".slices) AS slices`,
  );
  expect(rows).toEqual([{ n: '10', slices: '10' }]);
});

it('lets exactly one of 20 concurrent commits with the same expected length win; the others conflict', async () => {
  const stores = await workers(4);
  await commitN(stores[0]!, 't', 2, 0);
  const attempts = Array.from({ length: 20 }, (_, i) =>
    stores[i % 4]!.commit({
      threadId: 't',
      sliceId: `race-${i}`,
      expectedLength: 2,
      items: [user(`r${i}`, `racer ${i}`), user(`q${i}`, 'second')],
      result: result(`race-${i}`, 4),
    }),
  );
  const settled = await Promise.allSettled(attempts);
  const won = settled.flatMap((r, i) => (r.status === 'fulfilled' ? [[i, r.value] as const] : []));
  expect(won.map(([, v]) => v)).toEqual(['committed']);
  const lost = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  expect(lost).toHaveLength(19);
  for (const e of lost) expect(e).toBeInstanceOf(CommitConflictError);
  for (const e of lost) expect(e).toMatchObject({ threadId: 't', expectedLength: 2, actualLength: 4 });
  const winner = won[0]![0];
  expect((await stores[1]!.load('t')).map((s) => s.messageId)).toEqual(['t-0', 't-1', `r${winner}`, `q${winner}`]);
});

it('migrates an empty database once when workers start against it together, in the default schema', async () => {
  const fresh = await createTestDatabase('pgmigrate');
  const stores = Array.from({ length: 5 }, () => new PostgresConversationStore({ connectionString: fresh }));
  opened.push(...stores);
  expect(stores[0]!.schema).toBe('public');
  // Some migrate explicitly, some lazily through their first call: all at once.
  const outcomes = await Promise.all(
    stores.map((s, i) =>
      i % 2 === 0 ? s.migrate() : s.ensureThread({ threadId: `w${i}`, kind: 'root' }).then(() => s.migrate()),
    ),
  );
  expect(outcomes).toEqual(Array(5).fill(MIGRATIONS.length));
  expect(await queryOnce(fresh, 'SELECT version FROM public.infinity_schema_version')).toEqual([
    { version: MIGRATIONS.length },
  ]);
  expect(await stores[4]!.getThread('w1')).toMatchObject({ threadId: 'w1' });
});

it('reopens a schema it created and goes on; a schema a later release migrated further is used as it is', async () => {
  const first = open();
  await commitN(first, 't', 3, 0, { summary: { threadId: 't', sourceThreadId: 'c', upTo: 2, summary: 'short' } });
  await first.close();
  const again = open({ schema: first.schema });
  expect(await again.migrate()).toBe(MIGRATIONS.length);
  expect(await again.load('t', 1)).toEqual([user('t-1', 'item 1'), user('t-2', 'item 2')]);
  expect(await commitN(again, 't', 3, 0)).toBe('duplicate');
  expect(await commitN(again, 't', 1, 3)).toBe('committed');
  expect(await again.latestSummary('t')).toEqual({ summary: 'short', upTo: 2 });
  await again.close();

  // Migration N+1 from a later release (an added column), then this release again (a rollback).
  const pool = new pg.Pool({ connectionString: url });
  try {
    const later = [
      ...MIGRATIONS,
      (t: (name: string) => string) => `ALTER TABLE ${t('items')} ADD COLUMN tokens integer`,
    ];
    expect(await migrateSchema(pool, first.schema, later)).toBe(MIGRATIONS.length + 1);
  } finally {
    await pool.end();
  }
  const rolledBack = open({ schema: first.schema });
  expect(await rolledBack.migrate()).toBe(MIGRATIONS.length + 1);
  expect(await commitN(rolledBack, 't', 1, 4)).toBe('committed');
  expect(await rolledBack.length('t')).toBe(5);
  expect(await queryOnce(url, `SELECT version FROM "${first.schema}".infinity_schema_version`)).toEqual([
    { version: MIGRATIONS.length + 1 },
  ]);
});

it('retries a migration that failed: a database that did not exist yet works once it does', async () => {
  const name = `${inject('postgresDatabasePrefix')}late_${Date.now()}`;
  const s = new PostgresConversationStore({ connectionString: withDatabase(url, name) });
  opened.push(s);
  await expect(s.length('t')).rejects.toThrow(/does not exist/);
  await queryOnce(inject('postgresUrl'), `CREATE DATABASE ${name}`);
  expect(await s.length('t')).toBe(0);
});

it('keeps schemas of one database apart, and refuses a schema name it would have to escape', async () => {
  const [a, b] = [open(), open()];
  await commitN(a, 't', 2, 0);
  expect(await b.length('t')).toBe(0);
  expect(await commitN(b, 't', 1, 0)).toBe('committed'); // same thread and slice ids, another store
  expect(() => new PostgresConversationStore({ connectionString: url, schema: 'bad"name' })).toThrow(
    /plain identifier/,
  );
});

it('serves cached prefixes, reads what another worker appended since, and drops a prefix changed behind its back', async () => {
  const [a, b] = await workers(2);
  const texts = async (s: ConversationStore, from?: number) =>
    (await s.load('t', from)).map((x) => (x.item.kind === 'user' ? x.item.text : ''));
  await commitN(a!, 't', 10, 0);
  expect(await texts(a!)).toHaveLength(10);
  const [first] = await a!.load('t');
  expect(Object.isFrozen(first!.item)).toBe(true); // from the cache
  await commitN(b!, 't', 2, 10);
  expect(await texts(a!, 8)).toEqual(['item 8', 'item 9', 'item 10', 'item 11']);
  // An outside change (a restore, an edit by hand): the thread rewound and written again differently.
  await queryOnce(url, `DELETE FROM "${a!.schema}".items WHERE thread_id = 't' AND position >= 5`);
  await queryOnce(url, `DELETE FROM "${a!.schema}".slices`);
  const rewritten = Array.from({ length: 8 }, (_, i) => user(`x-${5 + i}`, `rewritten ${5 + i}`));
  await b!.commit({
    threadId: 't',
    sliceId: 'again',
    expectedLength: 5,
    items: rewritten,
    result: result('again', 13),
  });
  const expected = ['item 3', 'item 4', ...rewritten.map((x) => (x.item.kind === 'user' ? x.item.text : ''))];
  expect(await texts(a!, 3)).toEqual(expected);
  expect(await a!.load('t')).toEqual(await b!.load('t'));
});

it('stages an input of the full 32 MiB', async () => {
  const s = open();
  const data = randomBytes(32 * 1024 * 1024);
  const ref = await s.stageInput(data);
  expect(ref.bytes).toBe(data.byteLength);
  expect(Buffer.from((await s.loadStaged(ref))!).equals(data)).toBe(true);
  await s.commit({
    threadId: 't',
    sliceId: 's',
    expectedLength: 0,
    items: [],
    result: result('s', 0),
    consumedStaged: [ref.id],
  });
  expect(await s.loadStaged(ref)).toBeUndefined();
});
