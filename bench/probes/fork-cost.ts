/**
 * `npx tsx bench/probes/fork-cost.ts`: what a fork (issue 28 §1) costs against the source's length — storage added to
 * the conversation store per fork and `forkThread` latency (p50, p95) — for sources of 10, 100 and 1,000 items, on
 * SQLite and PostgreSQL, against a throwaway dev server. Also the model view of a fork's first slice next to the
 * source's own (the fork reads the same items through its base). Goal: ≤ 4 KiB and ≤ 100 ms p50 at 1,000 items.
 *
 * Sources are written straight into the store (two items per slice, a 1.2 KB completion each), so no model runs; the
 * forks' workflows start but no worker runs them (a fork's start is what is measured).
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Database from 'better-sqlite3';
import pg from 'pg';
import { modelView, threadChain } from '../../src/activities/history';
import { AgentClient } from '../../src/client/agent-client';
import type { StoredItem } from '../../src/core/types';
import { startLocalPostgres } from '../../infra/postgres';
import { startDevServer } from '../../src/devserver/server';
import type { ConversationStore } from '../../src/store/conversation-store';
import { PostgresConversationStore } from '../../src/store/postgres';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { runMain } from '../lib/main';

const LENGTHS = [10, 100, 1000];
/** Forks per source: their latencies give the percentiles, their total size the bytes per fork. */
const FORKS = 100;

/** Writes a source thread of `n` items, two per slice (a user text, a 1.2 KB answer). */
async function writeSource(store: ConversationStore, threadId: string, n: number): Promise<void> {
  await store.ensureThread({ threadId, kind: 'root' });
  const completion = 'x'.repeat(1200);
  for (let len = 0, s = 0; len < n; s++) {
    const sliceId = `${threadId}/slice-${s}`;
    const items: StoredItem[] = [
      { messageId: `${sliceId}-u`, item: { kind: 'user', text: `question ${s}` } },
      { messageId: `${sliceId}-a`, item: { kind: 'assistant', text: completion } },
    ].slice(0, n - len) as StoredItem[];
    const result = {
      sliceId,
      length: len + items.length,
      pendingCall: null,
      answeredCallIds: [],
      followUps: [],
      interrupted: false,
    };
    await store.commit({ threadId, sliceId, expectedLength: len, items, result });
    len += items.length;
  }
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

interface Row {
  store: string;
  items: number;
  bytesPerFork: number;
  rowBytes: number;
  p50: number;
  p95: number;
  viewSource: number;
  viewFork: number;
}

async function probe(
  name: string,
  store: ConversationStore,
  temporal: Client,
  size: () => Promise<number>,
  rowBytes: (source: string) => Promise<number>,
): Promise<Row[]> {
  const client = new AgentClient({ client: temporal, taskQueue: 'fork-probe', store });
  const rows: Row[] = [];
  for (const n of LENGTHS) {
    const source = `${name}-source-${n}`;
    await writeSource(store, source, n);
    // One fork first: its warm-up (connections, statements, the migration) is not the cost of a fork.
    await client.forkThread(source, { at: 'now', threadId: `${source}-warm` });
    const before = await size();
    const ms: number[] = [];
    for (let i = 0; i < FORKS; i++) {
      const t0 = performance.now();
      await client.forkThread(source, { at: 'now', threadId: `${source}-fork-${i}` });
      ms.push(performance.now() - t0);
    }
    const after = await size();
    const time = async (threadId: string) => {
      const t0 = performance.now();
      const view = await modelView(store, await threadChain(store, threadId));
      if (view.length !== n) throw new Error(`view of ${threadId}: ${view.length} items, expected ${n}`);
      return performance.now() - t0;
    };
    await time(source);
    await time(`${source}-fork-0`);
    rows.push({
      store: name,
      items: n,
      bytesPerFork: Math.round((after - before) / FORKS),
      rowBytes: await rowBytes(source),
      p50: pct(ms, 0.5),
      p95: pct(ms, 0.95),
      viewSource: await time(source),
      viewFork: await time(`${source}-fork-1`),
    });
  }
  return rows;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'fork-probe-'));
  const server = await startDevServer({ ui: false, dbFilename: join(dir, 'temporal.sqlite') });
  const postgres = await startLocalPostgres({ dataDir: join(dir, 'pg') });
  const connection = await Connection.connect({ address: server.address });
  const temporal = new Client({ connection });
  const rows: Row[] = [];
  try {
    const file = join(dir, 'store.sqlite');
    const sqlite = new SqliteConversationStore(file);
    const reader = new Database(file);
    // The file after a checkpoint: every page the forks added, their rows and index entries.
    const sqliteSize = async () => {
      reader.pragma('wal_checkpoint(TRUNCATE)');
      return statSync(file).size;
    };
    const sqliteRow = async (source: string) =>
      (
        reader
          .prepare(
            `SELECT AVG(length(thread_id) + length(kind) + length(root_thread_id) + length(base_thread_id) + 8 + 8 + 8) AS b
             FROM threads WHERE base_thread_id = ?`,
          )
          .get(source) as { b: number }
      ).b;
    rows.push(...(await probe('sqlite', sqlite, temporal, sqliteSize, sqliteRow)));
    reader.close();
    await sqlite.close();

    const url = postgres.createDatabase('forkprobe');
    const pgStore = new PostgresConversationStore({ connectionString: url });
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    // Table, its indexes and TOAST: what the database holds for thread records.
    const pgSize = async () =>
      Number((await pool.query<{ s: string }>(`SELECT pg_total_relation_size('threads') AS s`)).rows[0]!.s);
    const pgRow = async (source: string) =>
      Number(
        (
          await pool.query<{ b: string }>(
            'SELECT AVG(pg_column_size(t.*)) AS b FROM threads t WHERE base_thread_id = $1',
            [source],
          )
        ).rows[0]!.b,
      );
    rows.push(...(await probe('postgres', pgStore, temporal, pgSize, pgRow)));
    await pool.end();
    await pgStore.close();
  } finally {
    await connection.close();
    await server.stop();
    await postgres.stop();
  }
  console.log(
    '| store | source items | bytes per fork (file/relation growth) | thread row bytes | fork p50 ms | fork p95 ms | view source ms | view fork ms |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(
      `| ${r.store} | ${r.items} | ${r.bytesPerFork} | ${Math.round(r.rowBytes)} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.viewSource.toFixed(2)} | ${r.viewFork.toFixed(2)} |`,
    );
}

runMain(main);
