/**
 * The store contract (`test/store-contract.ts`) for each store: in memory, a real SQLite file, a real PostgreSQL
 * database (one per run of this file, a schema per store). Then what only the SQLite store does.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { StoredItem } from '../../src/core/types';
import { CommitConflictError, type ConversationStore } from '../../src/store/conversation-store';
import { InMemoryConversationStore } from '../../src/store/memory';
import { PostgresConversationStore } from '../../src/store/postgres';
import { ITEM_CACHE_MIN_ITEMS, SqliteConversationStore } from '../../src/store/sqlite';
import { createTestDatabase } from '../postgres';
import { result, storeContract, user } from '../store-contract';

const dir = mkdtempSync(join(tmpdir(), 'store-test-'));
let database: Promise<string> | undefined;
let schemas = 0;

storeContract('in-memory', () => new InMemoryConversationStore());
storeContract('sqlite', () => new SqliteConversationStore(join(dir, `${Math.random()}.sqlite`)));
storeContract(
  'postgres',
  async () =>
    new PostgresConversationStore({
      connectionString: await (database ??= createTestDatabase('store')),
      schema: `contract_${++schemas}`,
    }),
);

it('sqlite: survives reopening and is readable from a second connection', async () => {
  const file = join(dir, 'reopen.sqlite');
  const a = new SqliteConversationStore(file);
  await a.commit({
    threadId: 't',
    sliceId: 's1',
    expectedLength: 0,
    items: [user('a', 'persisted')],
    result: result('s1', 1),
  });
  const reader = new SqliteConversationStore(file, { readonly: true });
  expect(await reader.load('t')).toEqual([user('a', 'persisted')]);
  await reader.close();
  await a.close();
  const b = new SqliteConversationStore(file);
  expect(await b.length('t')).toBe(1);
  await b.close();
});

it('sqlite: upgrades a store written by an older schema without losing items', async () => {
  const file = join(dir, 'v2.sqlite');
  const old = new Database(file);
  old.exec(`CREATE TABLE threads (thread_id TEXT PRIMARY KEY, kind TEXT NOT NULL, parent_thread_id TEXT, root_thread_id TEXT NOT NULL,
      spawn_order INTEGER, spawn_tool_call_id TEXT, closed INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);
    CREATE INDEX threads_parent ON threads(parent_thread_id);
    CREATE TABLE items (thread_id TEXT NOT NULL, position INTEGER NOT NULL, message_id TEXT NOT NULL, slice_id TEXT NOT NULL,
      item TEXT NOT NULL, PRIMARY KEY (thread_id, position)) WITHOUT ROWID;
    CREATE TABLE slices (thread_id TEXT NOT NULL, slice_id TEXT NOT NULL, result TEXT NOT NULL, committed_at INTEGER NOT NULL,
      PRIMARY KEY (thread_id, slice_id)) WITHOUT ROWID;
    CREATE TABLE summaries (thread_id TEXT NOT NULL, source_thread_id TEXT NOT NULL, up_to INTEGER NOT NULL, summary TEXT NOT NULL,
      UNIQUE (thread_id, source_thread_id));
    INSERT INTO threads VALUES ('t', 'root', NULL, 't', NULL, NULL, 0, 0);
    INSERT INTO items VALUES ('t', 0, 'a', 's1', '{"kind":"user","text":"before the upgrade"}');
    INSERT INTO items VALUES ('t', 1, 'b', 's1', '{"kind":"user","text":"second"}');
    INSERT INTO slices VALUES ('t', 's1', '{"sliceId":"s1","length":2,"pendingCall":null,"answeredCallIds":[],"followUps":[],"interrupted":false}', 0);
    PRAGMA user_version = 2;`);
  old.close();
  const s = new SqliteConversationStore(file);
  expect((await s.load('t')).map((x) => [x.messageId, x.item])).toEqual([
    ['a', { kind: 'user', text: 'before the upgrade' }],
    ['b', { kind: 'user', text: 'second' }],
  ]);
  expect(await s.length('t')).toBe(2);
  expect(
    await s.commit({
      threadId: 't',
      sliceId: 's1',
      expectedLength: 2,
      items: [user('c', 'x')],
      result: result('s1', 3),
    }),
  ).toBe('duplicate');
  expect(
    await s.commit({
      threadId: 't',
      sliceId: 's2',
      expectedLength: 2,
      items: [user('c', 'after')],
      result: result('s2', 3),
    }),
  ).toBe('committed');
  await expect(
    s.commit({ threadId: 't', sliceId: 's3', expectedLength: 2, items: [user('d', 'x')], result: result('s3', 3) }),
  ).rejects.toBeInstanceOf(CommitConflictError);
  expect((await s.load('t', 2)).map((x) => x.item)).toEqual([{ kind: 'user', text: 'after' }]);
  await s.close();
  const check = new Database(file, { readonly: true });
  expect(check.pragma('user_version', { simple: true })).toBe(10);
  expect(check.prepare("SELECT sql FROM sqlite_master WHERE name = 'items'").pluck().get()).not.toMatch(
    /WITHOUT ROWID/,
  );
  expect(check.prepare("SELECT name FROM sqlite_master WHERE name = 'staged_inputs'").pluck().get()).toBe(
    'staged_inputs',
  ); // migration 4
  check.close();
});

it('sqlite: a store from before spend per model (version 9) upgrades; a read-only reader of it shows none until then', async () => {
  const file = join(dir, 'before-model-spend.sqlite');
  const tree = { scope: 'tree', key: 'root' } as const;
  const amount = { inputTokens: 3, outputTokens: 2, totalTokens: 5, usd: 0.5, unpriced: false };
  const first = new SqliteConversationStore(file);
  await first.commit({
    threadId: 't',
    sliceId: 's1',
    expectedLength: 0,
    items: [],
    result: result('s1', 0),
    spend: { refs: [tree], amount },
  });
  await first.close();
  const old = new Database(file);
  old.exec('DROP TABLE budget_model_spend; PRAGMA user_version = 9;');
  old.close();
  const reader = new SqliteConversationStore(file, { readonly: true });
  expect(await reader.spendByModel(tree)).toEqual([]);
  expect((await reader.budgets([tree]))[0]!.spend.totalTokens).toBe(5);
  const writer = new SqliteConversationStore(file);
  await writer.commit({
    threadId: 't',
    sliceId: 's2',
    expectedLength: 0,
    items: [],
    result: result('s2', 0),
    spend: { refs: [tree], amount, byModel: [{ model: 'p:m', amount }] },
  });
  expect((await reader.spendByModel(tree)).map((m) => [m.model, m.totalTokens, m.slices])).toEqual([['p:m', 5, 1]]);
  expect((await reader.budgets([tree]))[0]!.spend.totalTokens).toBe(10);
  await reader.close();
  await writer.close();
});

describe('sqlite item cache', () => {
  const commitN = (s: ConversationStore, threadId: string, n: number, from: number) =>
    s.commit({
      threadId,
      sliceId: `s${from}`,
      expectedLength: from,
      items: Array.from({ length: n }, (_, i) => user(`${threadId}-${from + i}`, `item ${from + i}`)),
      result: result(`s${from}`, from + n),
    });
  const texts = (items: StoredItem[]) => items.map((s) => (s.item.kind === 'user' ? s.item.text : s.item.kind));
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => `item ${a + i}`);
  const N = ITEM_CACHE_MIN_ITEMS;

  it('serves prefixes from memory and reads what another connection appended since', async () => {
    const file = join(dir, 'cache.sqlite');
    const a = new SqliteConversationStore(file);
    const b = new SqliteConversationStore(file);
    await a.ensureThread({ threadId: 't', kind: 'root' });
    await commitN(a, 't', N, 0);
    expect(texts(await a.load('t'))).toEqual(range(0, N));
    const earlier = await a.load('t');
    expect(Object.isFrozen(earlier[0]!.item)).toBe(true); // served from the cache
    await commitN(b, 't', 2, N); // written past a's cache
    expect(texts(await a.load('t'))).toEqual(range(0, N + 2));
    expect(texts(earlier)).toEqual(range(0, N)); // what a caller already holds does not grow under it
    expect(texts(await a.load('t', 1, 3))).toEqual(range(1, 3));
    expect(texts(await a.load('t', N + 1))).toEqual(range(N + 1, N + 2));
    expect(texts(await a.load('t', 2, 100))).toEqual(range(2, N + 2));
    expect(await a.load('t', N + 2)).toEqual([]);
    await a.close();
    await b.close();
  });

  it('a range beyond the cached prefix is read without leaving a gap in the cache', async () => {
    const s = new SqliteConversationStore(join(dir, 'cache-gap.sqlite'));
    await s.ensureThread({ threadId: 't', kind: 'root' });
    await commitN(s, 't', N + 6, 0);
    expect(texts(await s.load('t', N + 4))).toEqual(range(N + 4, N + 6));
    expect(texts(await s.load('t', 0, N))).toEqual(range(0, N));
    expect(texts(await s.load('t'))).toEqual(range(0, N + 6));
    await s.close();
  });

  it('shares frozen items of long threads; short ones are not cached', async () => {
    const s = new SqliteConversationStore(join(dir, 'cache-frozen.sqlite'));
    for (const [t, n] of [
      ['long', N],
      ['short', N - 1],
    ] as const) {
      await s.ensureThread({ threadId: t, kind: 'root' });
      await commitN(s, t, n, 0);
    }
    const [first] = await s.load('long');
    expect(() => {
      (first!.item as { text: string }).text = 'changed';
    }).toThrow(TypeError);
    expect(texts(await s.load('long'))).toEqual(range(0, N));
    await s.load('short');
    expect(Object.isFrozen((await s.load('short'))[0]!.item)).toBe(false);
    await s.close();
  });

  it('stays correct when the bound evicts threads, and with the cache off', async () => {
    for (const itemCacheBytes of [5000, 0]) {
      const s = new SqliteConversationStore(join(dir, `cache-${itemCacheBytes}-${Math.random()}.sqlite`), {
        itemCacheBytes,
      });
      for (const t of ['x', 'y', 'z']) {
        await s.ensureThread({ threadId: t, kind: 'root' });
        await commitN(s, t, N, 0);
      }
      for (const t of ['x', 'y', 'z', 'x']) expect(texts(await s.load(t))).toEqual(range(0, N));
      await commitN(s, 'x', 1, N);
      expect(texts(await s.load('x', 1))).toEqual(range(1, N + 1));
      await s.close();
    }
  });
});
