/**
 * Forks in the stores and the view, without a worker (issue 28 §1): a fork's record (`base`) round-trips in memory,
 * SQLite and PostgreSQL, and databases made before it get the columns by their migration with their rows intact; the
 * model view and the inherited history of a fork of a child, of a compacted source and of a fork of a fork; the call
 * pending at a fork point found through what the source inherited. And a server without the `ForkedFrom` search
 * attribute still starts a fork (memo only).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { inheritedHistory, modelView, threadChain } from '../src/activities/history';
import { AgentClient } from '../src/client/agent-client';
import { FORKED_FROM, pendingAt, resolveForkPoint } from '../src/client/fork';
import { compactedSummary } from '../src/core/texts';
import type { HistoryItem, StoredItem } from '../src/core/types';
import { findTemporalCli } from '../src/devserver/cli';
import { freePort, THREAD_SEARCH_ATTRIBUTES } from '../src/devserver/server';
import type { ConversationStore } from '../src/store/conversation-store';
import { InMemoryConversationStore } from '../src/store/memory';
import { PostgresConversationStore } from '../src/store/postgres';
import { MIGRATIONS, migrateSchema } from '../src/store/postgres-schema';
import { SqliteConversationStore } from '../src/store/sqlite';
import { uid } from './helpers';
import { createTestDatabase } from './postgres';

const user = (text: string): HistoryItem => ({ kind: 'user', text });
const said = (text: string): HistoryItem => ({ kind: 'assistant', text });

/** Commits `items` to `threadId` as one slice. */
async function commit(
  store: ConversationStore,
  threadId: string,
  items: HistoryItem[],
  summary?: { upTo: number; text: string; from: string },
) {
  const length = await store.length(threadId);
  const sliceId = `${threadId}/slice-${length}`;
  const stored: StoredItem[] = items.map((item, i) => ({ messageId: `${sliceId}-${i}`, item }));
  await store.commit({
    threadId,
    sliceId,
    expectedLength: length,
    items: stored,
    result: {
      sliceId,
      length: length + items.length,
      pendingCall: null,
      answeredCallIds: [],
      followUps: [],
      interrupted: false,
    },
    ...(summary && {
      summary: {
        threadId: summary.from === threadId ? threadId : summary.from,
        sourceThreadId: `${sliceId}-c`,
        summary: summary.text,
        upTo: summary.upTo,
      },
    }),
  });
  return sliceId;
}

const texts = (items: readonly HistoryItem[]) =>
  items.map((i) =>
    i.kind === 'user' || i.kind === 'assistant' ? i.text : i.kind === 'tool_call' ? `call ${i.name}` : i.kind,
  );

const opened: ConversationStore[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
});

const makers: [string, () => Promise<ConversationStore>][] = [
  ['memory', async () => new InMemoryConversationStore()],
  ['SQLite', async () => new SqliteConversationStore(join(inject('scratchDir'), `${uid('fork-store')}.sqlite`))],
  [
    'PostgreSQL',
    async () => new PostgresConversationStore({ connectionString: await createTestDatabase('forkstore') }),
  ],
];

describe.each(makers)('a fork in the %s store', (_name, make) => {
  it('keeps its base, and its view is the source prefix then its own items', async () => {
    const store = await make();
    opened.push(store);
    await store.ensureThread({ threadId: 'root', kind: 'root' });
    await commit(store, 'root', [user('a'), said('ack a')]);
    await commit(store, 'root', [user('spawn'), { kind: 'tool_call', id: 'sp', name: 'spawn_thread', args: {} }]);
    // A child spawned at 4: it inherits the spawn call, and answers it first (its seed).
    await store.ensureThread({
      threadId: 'child',
      kind: 'child',
      parentThreadId: 'root',
      rootThreadId: 'root',
      spawnOrder: 4,
    });
    await commit(store, 'child', [
      { kind: 'tool_result', id: 'sp', content: [{ type: 'text', text: 'you are the child' }] },
      said('child works'),
    ]);

    // A fork of the child at 0: the root's first four items, ending with the spawn call, pending there.
    const fork = await store.ensureThread({ threadId: 'f0', kind: 'root', base: { threadId: 'child', upTo: 0 } });
    expect(fork).toEqual({
      threadId: 'f0',
      kind: 'root',
      rootThreadId: 'f0',
      base: { threadId: 'child', upTo: 0 },
      closed: false,
    });
    expect(await store.getThread('f0')).toEqual(fork);
    expect(texts(await modelView(store, await threadChain(store, 'f0')))).toEqual([
      'a',
      'ack a',
      'spawn',
      'call spawn_thread',
    ]);
    expect(await pendingAt(store, (await store.getThread('child'))!, 0)).toEqual({
      id: 'sp',
      name: 'spawn_thread',
      passive: false,
    });
    expect(await pendingAt(store, (await store.getThread('child'))!, 2)).toBeUndefined();
    // Its ancestors stay its own: a fork is a root.
    expect((await threadChain(store, 'f0')).map((r) => r.threadId)).toEqual(['f0']);

    // A fork of the child at 2, then a fork of that fork: the chain is followed through both.
    await store.ensureThread({ threadId: 'f2', kind: 'root', base: { threadId: 'child', upTo: 2 } });
    await commit(store, 'f2', [user('f2 own'), said('ack f2')]);
    await store.ensureThread({ threadId: 'ff', kind: 'root', base: { threadId: 'f2', upTo: 1 } });
    await commit(store, 'ff', [user('ff own')]);
    const throughBoth = ['a', 'ack a', 'spawn', 'call spawn_thread', 'tool_result', 'child works', 'f2 own', 'ff own'];
    expect(texts(await modelView(store, await threadChain(store, 'ff')))).toEqual(throughBoth);
    expect(texts((await inheritedHistory(store, 'ff')).map((s) => s.item))).toEqual(throughBoth);
    // The source goes on: nothing of it after the point reaches the forks.
    await commit(store, 'child', [user('child later')]);
    await commit(store, 'f2', [user('f2 later')]);
    expect(texts(await modelView(store, await threadChain(store, 'ff')))).toEqual(throughBoth);

    // A source compacted before the point: the fork's view starts with the same summary; after it, the items.
    await store.ensureThread({ threadId: 'long', kind: 'root' });
    await commit(store, 'long', [user('m1'), said('ack m1'), user('m2'), said('ack m2')]);
    await commit(store, 'long', [user('m3')], { from: 'long', upTo: 4, text: 'S covers m1,m2' });
    const sliceId = await commit(store, 'long', [said('ack m3')]);
    expect(await resolveForkPoint(store, 'long', sliceId)).toBe(6);
    expect(await resolveForkPoint(store, 'long', 'now')).toBe(6);
    await store.ensureThread({ threadId: 'lf', kind: 'root', base: { threadId: 'long', upTo: 5 } });
    await commit(store, 'lf', [user('x')]);
    expect(await modelView(store, await threadChain(store, 'lf'))).toEqual([
      said(compactedSummary('S covers m1,m2')),
      user('m3'),
      user('x'),
    ]);
    // A fork before the summary's end keeps the items the summary stands for.
    await store.ensureThread({ threadId: 'early', kind: 'root', base: { threadId: 'long', upTo: 3 } });
    expect(texts(await modelView(store, await threadChain(store, 'early')))).toEqual(['m1', 'ack m1', 'm2']);
  });
});

describe('databases made before forks', () => {
  it('SQLite: the migration adds the columns, old rows read as before', async () => {
    const file = join(inject('scratchDir'), `${uid('fork-migrate')}.sqlite`);
    const fresh = new SqliteConversationStore(file);
    await fresh.ensureThread({ threadId: 'old', kind: 'root' });
    await commit(fresh, 'old', [user('before forks')]);
    await fresh.close();
    // Back to the schema before forks (migration 6): no base columns, nor the provider limits' tables of migration 7.
    const db = new Database(file);
    const version = db.pragma('user_version', { simple: true }) as number;
    db.exec('ALTER TABLE threads DROP COLUMN base_thread_id; ALTER TABLE threads DROP COLUMN base_up_to');
    db.exec('DROP TABLE capacity_keys; DROP TABLE capacity_leases');
    db.pragma(`user_version = ${version - 2}`);
    db.close();

    const store = new SqliteConversationStore(file);
    opened.push(store);
    expect(await store.getThread('old')).toEqual({ threadId: 'old', kind: 'root', rootThreadId: 'old', closed: false });
    await store.ensureThread({ threadId: 'new', kind: 'root', base: { threadId: 'old', upTo: 1 } });
    expect((await store.getThread('new'))?.base).toEqual({ threadId: 'old', upTo: 1 });
    expect(texts(await modelView(store, await threadChain(store, 'new')))).toEqual(['before forks']);
  });

  it('PostgreSQL: the migration adds the columns, old rows read as before', async () => {
    const url = await createTestDatabase('forkmigrate');
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      // The schema before forks (migration 3) and provider limits (migration 4).
      expect(await migrateSchema(pool, 'before', MIGRATIONS.slice(0, -2))).toBe(MIGRATIONS.length - 2);
      await pool.query(
        `INSERT INTO "before"."threads" (thread_id, kind, root_thread_id) VALUES ('old', 'root', 'old')`,
      );
    } finally {
      await pool.end();
    }
    const store = new PostgresConversationStore({ connectionString: url, schema: 'before' });
    opened.push(store);
    expect(await store.migrate()).toBe(MIGRATIONS.length);
    expect(await store.getThread('old')).toEqual({ threadId: 'old', kind: 'root', rootThreadId: 'old', closed: false });
    await store.ensureThread({ threadId: 'new', kind: 'root', base: { threadId: 'old', upTo: 0 } });
    expect((await store.getThread('new'))?.base).toEqual({ threadId: 'old', upTo: 0 });
  });
});

describe('a server without the ForkedFrom search attribute', () => {
  it('still starts the fork, linked by its memo', async () => {
    const port = await freePort();
    const server = spawn(
      findTemporalCli(),
      [
        ...['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'],
        // The thread's own attributes, as a server set up before forks has them.
        ...Object.entries(THREAD_SEARCH_ATTRIBUTES).flatMap(([k, v]) => ['--search-attribute', `${k}=${v}`]),
      ],
      { stdio: 'ignore' },
    );
    const store = new InMemoryConversationStore();
    let connection: Connection | undefined;
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          connection = await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 1000 });
          await connection.workflowService.describeNamespace({ namespace: 'default' });
          break;
        } catch (e) {
          await connection?.close();
          connection = undefined;
          if (Date.now() > deadline) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      const client = new AgentClient({ client: new Client({ connection }), taskQueue: uid('no-attr'), store });
      await store.ensureThread({ threadId: 'src', kind: 'root' });
      await commit(store, 'src', [user('a'), said('ack a')]);
      const fork = await client.forkThread('src', { at: 1 });
      const described = await fork.workflow.describe();
      expect(described.memo?.forkedFrom).toEqual({ threadId: 'src', at: 1 });
      expect(described.typedSearchAttributes.get(FORKED_FROM)).toBeUndefined();
    } finally {
      await connection?.close();
      server.kill('SIGTERM');
    }
  });
});
