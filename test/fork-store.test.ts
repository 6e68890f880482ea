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
import { FORKED_FROM, resolveForkPoint } from '../src/client/fork';
import { branchAt, pendingAt, rewindPointError } from '../src/store/chain';
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
  archive?: [number, number],
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
    ...(archive && { archive }),
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

describe.each(makers)('a rewound thread in the %s store', (_name, make) => {
  it('hides its archived ranges from its own view, and from children and forks made after the rewind only', async () => {
    const store = await make();
    opened.push(store);
    await store.ensureThread({ threadId: 't', kind: 'root' });
    await commit(store, 't', [user('m1'), said('ack m1')]);
    // A summary of the first four items, which the rewind below archives half of.
    await commit(store, 't', [user('m2'), said('ack m2')], { upTo: 4, text: 'm1 m2', from: 't' });
    await store.ensureThread({ threadId: 'child-before', kind: 'child', parentThreadId: 't', spawnOrder: 4 });
    await store.ensureThread({ threadId: 'fork-before', kind: 'root', base: { threadId: 't', upTo: 4 } });

    // The rewind to item 2: its note at 4, the range [2, 4) archived with it; a repeated commit adds no second range.
    const rewind: HistoryItem = { kind: 'rewind', to: 2, branch: 1 };
    const sliceId = await commit(store, 't', [rewind], undefined, [2, 4]);
    const again = await store.commit({
      threadId: 't',
      sliceId,
      expectedLength: 4,
      items: [{ messageId: 'x', item: rewind }],
      result: { sliceId, length: 5, pendingCall: null, answeredCallIds: [], followUps: [], interrupted: false },
      archive: [2, 4],
    });
    expect(again).toBe('duplicate');
    expect((await store.getThread('t'))?.archived).toEqual([[2, 4]]);
    expect(await store.length('t')).toBe(5);

    const view = async (id: string) => texts(await modelView(store, await threadChain(store, id)));
    // The summary covers archived items: ignored; the note stays in the view (the model's projection skips it).
    expect(await view('t')).toEqual(['m1', 'ack m1', 'rewind']);
    // Made before the rewind, at its end: they keep what they saw, the summary included.
    expect(await view('child-before')).toEqual([compactedSummary('m1 m2')]);
    expect(await view('fork-before')).toEqual([compactedSummary('m1 m2')]);
    // Made after it (past the note): they see the thread rewound.
    await store.ensureThread({ threadId: 'child-after', kind: 'child', parentThreadId: 't', spawnOrder: 5 });
    await store.ensureThread({ threadId: 'fork-after', kind: 'root', base: { threadId: 't', upTo: 5 } });
    expect(await view('child-after')).toEqual(['m1', 'ack m1', 'rewind']);
    expect(await view('fork-after')).toEqual(['m1', 'ack m1', 'rewind']);
    expect((await inheritedHistory(store, 'fork-after')).map((s) => s.item.kind)).toEqual([
      'user',
      'assistant',
      'rewind',
    ]);
    // A fork at a point inside the range, or a rewind there, would end on an archived item.
    const rec = (await store.getThread('t'))!;
    expect([1, 2, 3, 4, 5].map((at) => branchAt(rec, at))).toEqual([0, 0, 1, 1, 0]);
    expect(rewindPointError(rec, 3, 5)).toMatch(/inside branch 1/);
    expect(rewindPointError(rec, 5, 5)).toMatch(/not before the end/);
    expect(rewindPointError(rec, 2, 5)).toBeUndefined();
    // The point's last visible item is what a fork there takes; the note is skipped.
    expect(await pendingAt(store, rec, 5)).toBeUndefined();

    // A summary made after the rewind covers the view, and is used.
    await commit(store, 't', [user('m3')], { upTo: 6, text: 'm1 m3', from: 't' });
    expect(await view('t')).toEqual([compactedSummary('m1 m3')]);
    expect(await store.latestSummary('t', undefined, [[2, 4]])).toEqual({ summary: 'm1 m3', upTo: 6 });
    expect(await store.latestSummary('t', 5, [[2, 4]])).toBeUndefined();
  });
});

describe('databases made before forks', () => {
  it('SQLite: the migration adds the columns, old rows read as before', async () => {
    const file = join(inject('scratchDir'), `${uid('fork-migrate')}.sqlite`);
    const fresh = new SqliteConversationStore(file);
    await fresh.ensureThread({ threadId: 'old', kind: 'root' });
    await commit(fresh, 'old', [user('before forks')]);
    await fresh.close();
    // Back to the schema before forks (migration 6): no base columns, nor what the migrations after it made (the
    // provider limits' tables of 7, the scores of 8, the archived ranges of 9, the spend per model of 10).
    const db = new Database(file);
    const version = db.pragma('user_version', { simple: true }) as number;
    expect(version).toBe(10);
    db.exec('ALTER TABLE threads DROP COLUMN base_thread_id; ALTER TABLE threads DROP COLUMN base_up_to');
    db.exec('DROP TABLE capacity_keys; DROP TABLE capacity_leases; DROP TABLE scores');
    db.exec('ALTER TABLE threads DROP COLUMN archived');
    db.exec('DROP TABLE budget_model_spend');
    db.pragma(`user_version = ${version - 5}`);
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
      // The schema before forks (migration 3) and the migrations after it (provider limits, scores, archived ranges,
      // spend per model).
      expect(MIGRATIONS).toHaveLength(7);
      expect(await migrateSchema(pool, 'before', MIGRATIONS.slice(0, 2))).toBe(2);
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
