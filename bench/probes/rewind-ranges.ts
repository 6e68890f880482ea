/**
 * `npx tsx bench/probes/rewind-ranges.ts [ranges]`: what a thread with many archived ranges (rewinds, issue 28 §2;
 * issue 38 finding 7) costs per model view and per follow poll (`committedSince`), in the memory, SQLite and (when
 * Debian's `postgresql` is installed) PostgreSQL stores. Default 30,000 ranges, in two shapes:
 * - `disjoint`: a "regenerate" loop, each rewind drops the last answer (`[3k+1, 3k+2)`, a rewind note at `3k+2`);
 * - `nested`: each rewind goes back to item 1, its range holding every earlier one (`[1, 2k+2)`).
 * The ranges are written into the thread's record directly: the store refuses rewinds past its bound
 * (`MAX_ARCHIVED_RANGES`) but still reads records made before it. Milliseconds, the median of a few views; a view
 * that fails prints its error. Figures before and after the fix: docs/fork.md, "Limits and what is left alone" (the
 * "before" ones from this probe run on the commit before it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { findPostgresBinDir, startLocalPostgres } from '../../infra/postgres';
import { modelView } from '../../src/activities/history';
import type { StoredItem } from '../../src/core/types';
import { committedSince } from '../../src/store/chain';
import type { ArchivedRange, ConversationStore } from '../../src/store/conversation-store';
import { InMemoryConversationStore } from '../../src/store/memory';
import { PostgresConversationStore } from '../../src/store/postgres';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { runMain } from '../lib/main';

const RANGES = Number(process.argv[2] ?? 30_000);

interface Shape {
  name: string;
  items: StoredItem[];
  ranges: ArchivedRange[];
}

const user = (p: number): StoredItem => ({ messageId: `u${p}`, item: { kind: 'user', text: `question ${p}` } });
const answer = (p: number): StoredItem => ({ messageId: `a${p}`, item: { kind: 'assistant', text: `answer ${p}` } });
const note = (p: number, to: number, branch: number): StoredItem => ({
  messageId: `r${p}`,
  item: { kind: 'rewind', to, branch },
});

function disjoint(n: number): Shape {
  const items: StoredItem[] = [];
  const ranges: ArchivedRange[] = [];
  for (let k = 0; k < n; k++) {
    const p = items.length;
    items.push(user(p), answer(p + 1), note(p + 2, p + 1, k + 1));
    ranges.push([p + 1, p + 2]);
  }
  return { name: 'disjoint', items, ranges };
}

function nested(n: number): Shape {
  const items: StoredItem[] = [user(0)];
  const ranges: ArchivedRange[] = [];
  for (let k = 0; k < n; k++) {
    const p = items.length;
    items.push(answer(p));
    ranges.push([1, p + 1]);
    items.push(note(p + 1, 1, k + 1));
  }
  return { name: 'nested', items, ranges };
}

async function fill(store: ConversationStore, threadId: string, items: StoredItem[]): Promise<void> {
  await store.ensureThread({ threadId, kind: 'root' });
  const chunk = 5_000;
  for (let from = 0; from < items.length; from += chunk) {
    const part = items.slice(from, from + chunk);
    const sliceId = `fill-${from}`;
    const result = {
      sliceId,
      length: from + part.length,
      pendingCall: null,
      answeredCallIds: [],
      followUps: [],
      interrupted: false,
    };
    await store.commit({ threadId, sliceId, expectedLength: from, items: part, result });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median ms of `runs` calls of `f` after one warm-up, or the error the call threw. */
async function time(f: () => Promise<unknown>, runs: number): Promise<string> {
  try {
    const t0 = performance.now();
    await f();
    // One slow warm-up (seconds) is enough of a figure: no more runs.
    if (performance.now() - t0 > 2_000) return (performance.now() - t0).toFixed(0);
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await f();
      ms.push(performance.now() - t);
    }
    return median(ms).toFixed(2);
  } catch (e) {
    return `fails: ${(e instanceof Error ? e.message : String(e)).slice(0, 60)}`;
  }
}

interface Row {
  store: string;
  shape: string;
  items: number;
  visible: number;
  record: string;
  view: string;
  poll: string;
}

async function probe(
  storeName: string,
  store: ConversationStore,
  shape: Shape,
  setArchived: (threadId: string, ranges: ArchivedRange[]) => Promise<void>,
): Promise<Row> {
  const threadId = `${shape.name}-${RANGES}`;
  await fill(store, threadId, shape.items);
  await setArchived(threadId, shape.ranges);
  const rec = (await store.getThread(threadId))!;
  if (rec.archived?.length !== shape.ranges.length) throw new Error(`${storeName}: the record holds no ranges`);
  const view = await modelView(store, [rec]).catch(() => []);
  return {
    store: storeName,
    shape: shape.name,
    items: shape.items.length,
    visible: view.length,
    record: await time(() => store.getThread(threadId), 5),
    view: await time(() => modelView(store, [rec]), 5),
    // A follower's poll of the last 100 items.
    poll: await time(() => committedSince(store, threadId, shape.items.length - 100), 5),
  };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'rewind-ranges-'));
  const shapes = [disjoint(RANGES), nested(RANGES)];
  const rows: Row[] = [];
  try {
    const memory = new InMemoryConversationStore();
    for (const shape of shapes)
      rows.push(
        await probe('memory', memory, shape, async (id, ranges) => {
          // The memory store keeps its records in a private map (getThread hands out copies).
          const threads = (memory as unknown as { threads: Map<string, { archived?: ArchivedRange[] }> }).threads;
          threads.get(id)!.archived = ranges;
        }),
      );

    const file = join(dir, 'store.sqlite');
    const sqlite = new SqliteConversationStore(file);
    const writer = new Database(file);
    for (const shape of shapes)
      rows.push(
        await probe('sqlite', sqlite, shape, async (id, ranges) => {
          writer.prepare('UPDATE threads SET archived = ? WHERE thread_id = ?').run(JSON.stringify(ranges), id);
        }),
      );
    writer.close();
    await sqlite.close();

    if (findPostgresBinDir()) {
      const postgres = await startLocalPostgres({ dataDir: join(dir, 'pg') });
      try {
        const url = postgres.createDatabase('rewindprobe');
        const store = new PostgresConversationStore({ connectionString: url });
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        for (const shape of shapes)
          rows.push(
            await probe('postgres', store, shape, async (id, ranges) => {
              await pool.query('UPDATE threads SET archived = $2 WHERE thread_id = $1', [id, JSON.stringify(ranges)]);
            }),
          );
        await pool.end();
        await store.close();
      } finally {
        await postgres.stop();
      }
    } else {
      console.log('(no PostgreSQL binaries: postgres skipped)');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`${RANGES} archived ranges per thread; ms, median of 5 after a warm-up (one run when over 2 s)`);
  console.log('| store | shape | items | model view items | getThread ms | model view ms | follow poll ms |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.store} | ${r.shape} | ${r.items} | ${r.visible} | ${r.record} | ${r.view} | ${r.poll} |`);
}

runMain(main);
