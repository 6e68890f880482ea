/**
 * The behaviour every `ConversationStore` owes the runtime, as one suite run against each implementation
 * (`test/unit/store.test.ts`): each behaviour is asserted once, for all stores alike.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { SliceResult } from '../src/core/slice-protocol';
import type { HistoryItem, StoredItem } from '../src/core/types';
import {
  type ArchivedRange,
  ArchiveLimitError,
  CommitConflictError,
  type ConversationStore,
  MAX_ARCHIVED_RANGES,
  type NewSummary,
} from '../src/store/conversation-store';
import { budgetLedgerContract } from './budget-ledger-contract';

export const result = (sliceId: string, length: number): SliceResult => ({
  sliceId,
  length,
  pendingCall: null,
  answeredCallIds: [],
  followUps: [],
  interrupted: false,
});
export const user = (id: string, text: string): StoredItem => ({ messageId: id, item: { kind: 'user', text } });
const call = (id: string, name: string): StoredItem => ({
  messageId: `m-${id}`,
  item: { kind: 'tool_call', id, name, args: { id } },
});
const texts = (items: StoredItem[]) => items.map((s) => (s.item.kind === 'user' ? s.item.text : s.item.kind));

/** Commits `n` user items `item <i>` to a thread holding `from`, as slice `s<from>`. */
export const commitN = (
  s: ConversationStore,
  threadId: string,
  n: number,
  from: number,
  extra: { summary?: NewSummary; consumedStaged?: string[] } = {},
) =>
  s.commit({
    threadId,
    sliceId: `s${from}`,
    expectedLength: from,
    items: Array.from({ length: n }, (_, i) => user(`${threadId}-${from + i}`, `item ${from + i}`)),
    result: result(`s${from}`, from + n),
    ...extra,
  });
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => `item ${a + i}`);

/**
 * Defines the contract suite for one kind of store. `open` makes a new, empty store each time (tests reuse thread ids);
 * every store it made is closed after each test.
 */
export function storeContract(name: string, open: () => ConversationStore | Promise<ConversationStore>): void {
  describe(`${name} store`, () => {
    const opened: ConversationStore[] = [];
    const make = async () => {
      const s = await open();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    it('keeps thread records with parent and spawn point; ensureThread creates once and returns the stored record', async () => {
      const s = await make();
      expect(await s.ensureThread({ threadId: 'r', kind: 'root' })).toEqual({
        threadId: 'r',
        kind: 'root',
        rootThreadId: 'r',
        closed: false,
      });
      const child = {
        threadId: 'c',
        kind: 'child' as const,
        parentThreadId: 'r',
        rootThreadId: 'r',
        spawnOrder: 3,
        spawnToolCallId: 'tc',
      };
      // Concurrent first calls (a slice and its retry, two workers) agree on one record.
      const created = await Promise.all([
        s.ensureThread(child),
        s.ensureThread(child),
        s.ensureThread({ ...child, spawnOrder: 9 }),
      ]);
      const stored = created.find((r) => r.spawnOrder === 3) ?? created[0]!;
      expect(created).toEqual([stored, stored, stored]);
      expect(await s.ensureThread({ threadId: 'c', kind: 'root' })).toEqual(stored); // the existing record wins
      await s.markClosed('c');
      await s.markClosed('nope'); // nothing to close: no error, no record
      expect(await s.getThread('c')).toEqual({ ...stored, closed: true });
      expect(await s.ensureThread(child)).toEqual({ ...stored, closed: true });
      expect(await s.getThread('r')).toEqual({ threadId: 'r', kind: 'root', rootThreadId: 'r', closed: false });
      expect(await s.getThread('nope')).toBeUndefined();
    });

    it('commits atomically, idempotently per slice, conditionally on length', async () => {
      const s = await make();
      await s.ensureThread({ threadId: 't', kind: 'root' });
      expect(
        await s.commit({
          threadId: 't',
          sliceId: 's1',
          expectedLength: 0,
          items: [user('a', 'one'), user('b', 'two')],
          result: result('s1', 2),
        }),
      ).toBe('committed');
      expect(
        await s.commit({
          threadId: 't',
          sliceId: 's1',
          expectedLength: 0,
          items: [user('a', 'one')],
          result: result('s1', 1),
        }),
      ).toBe('duplicate');
      // A committed slice is a duplicate whatever length it expects: its retry comes after later commits too.
      expect(
        await s.commit({ threadId: 't', sliceId: 's1', expectedLength: 7, items: [], result: result('s1', 7) }),
      ).toBe('duplicate');
      await expect(
        s.commit({ threadId: 't', sliceId: 's2', expectedLength: 1, items: [user('c', 'x')], result: result('s2', 2) }),
      ).rejects.toBeInstanceOf(CommitConflictError);
      expect((await s.load('t')).map((i) => i.messageId)).toEqual(['a', 'b']);
      expect(await s.findSlice('t', 's1')).toEqual(result('s1', 2));
      expect(await s.findSlice('t', 's2')).toBeUndefined();
      expect(await s.findSlice('other', 's1')).toBeUndefined(); // slice ids are per thread
      expect(
        await s.commit({ threadId: 'other', sliceId: 's1', expectedLength: 0, items: [], result: result('s1', 0) }),
      ).toBe('committed');
      // No thread record is needed, and a slice may commit no items.
      expect(await s.length('other')).toBe(0);
      expect(await s.findSlice('other', 's1')).toEqual(result('s1', 0));
    });

    it('names the thread, the expected and the actual length in a conflict, and writes nothing of it', async () => {
      const s = await make();
      await commitN(s, 't', 3, 0);
      const staged = await s.stageInput(Buffer.from('kept'));
      const error = await s
        .commit({
          threadId: 't',
          sliceId: 'late',
          expectedLength: 2,
          items: [user('x', 'lost')],
          result: result('late', 3),
          summary: { threadId: 't', sourceThreadId: 'c', upTo: 1, summary: 'lost' },
          consumedStaged: [staged.id],
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CommitConflictError);
      expect(error).toMatchObject({
        name: 'CommitConflictError',
        threadId: 't',
        expectedLength: 2,
        actualLength: 3,
        message: 'thread t: expected 2 committed items, found 3',
      });
      expect(texts(await s.load('t'))).toEqual(range(0, 3));
      expect(await s.findSlice('t', 'late')).toBeUndefined();
      expect(await s.latestSummary('t')).toBeUndefined();
      expect(await s.loadStaged(staged)).toBeDefined();
    });

    it('loads any range of a thread, short or long, however it was read before', async () => {
      const s = await make();
      expect(await s.load('empty')).toEqual([]);
      expect(await s.length('empty')).toBe(0);
      await commitN(s, 't', 3, 0);
      expect(await s.load('t', 1, 2)).toEqual([user('t-1', 'item 1')]);
      expect(texts(await s.load('t', 1))).toEqual(range(1, 3));
      expect(await s.load('t', 3)).toEqual([]);
      expect(await s.load('t', 5, 9)).toEqual([]);
      // Long enough for the stores that cache parsed items; reads that reach into and past what was read before.
      for (let from = 3; from < 24; from += 7) await commitN(s, 't', 7, from);
      expect(await s.length('t')).toBe(24);
      expect(texts(await s.load('t', 0, 10))).toEqual(range(0, 10));
      expect(texts(await s.load('t', 0, 10))).toEqual(range(0, 10));
      expect(texts(await s.load('t', 5, 15))).toEqual(range(5, 15));
      expect(texts(await s.load('t', 20))).toEqual(range(20, 24));
      expect(texts(await s.load('t'))).toEqual(range(0, 24));
      await commitN(s, 't', 2, 24);
      expect(texts(await s.load('t', 22))).toEqual(range(22, 26));
      expect(texts(await s.load('t'))).toEqual(range(0, 26));
      expect(texts(await s.load('t', 3, 4))).toEqual(['item 3']);
    });

    it('returns items exactly as committed: same values, same key order', async () => {
      const s = await make();
      const odd: HistoryItem = {
        kind: 'tool_result',
        id: 'c1',
        content: [{ type: 'text', text: 'NUL \u0000, lone \ud800, emoji 🚀, quotes "\'\\, ünïcødé, tab\t, newline\n' }],
        displayAs: [{ type: 'diff', content: { path: 'a.ts', patch: '+x' } }],
      };
      const args: HistoryItem = {
        kind: 'tool_call',
        id: 'c2',
        name: 'f',
        args: { z: 1, a: [3, 1.5, 1e21, -0.25], m: { y: null, b: true }, '': '' },
      };
      const reordered = { text: 'keys out of the usual order', kind: 'user' } as HistoryItem;
      const items = [odd, reordered, args].map((item, i) => ({ messageId: `m${i}`, item }));
      await s.commit({ threadId: 't', sliceId: 's1', expectedLength: 0, items, result: result('s1', 3) });
      const back = await s.load('t');
      expect(back).toEqual(items);
      expect(back.map((x) => JSON.stringify(x.item))).toEqual(items.map((x) => JSON.stringify(x.item)));
      expect(JSON.stringify(await s.findToolCall('t', 'c2'))).toBe(JSON.stringify(args));
    });

    it('finds a tool call by id, optionally only before a position', async () => {
      const s = await make();
      await s.commit({
        threadId: 't',
        sliceId: 's1',
        expectedLength: 0,
        items: [user('u', 'hi'), call('c1', 'first'), user('v', 'more'), call('c2', 'second')],
        result: result('s1', 4),
      });
      expect(await s.findToolCall('t', 'c2')).toEqual({
        kind: 'tool_call',
        id: 'c2',
        name: 'second',
        args: { id: 'c2' },
      });
      expect(await s.findToolCall('t', 'c2', 3)).toBeUndefined();
      expect(await s.findToolCall('t', 'c2', 4)).toMatchObject({ name: 'second' });
      expect(await s.findToolCall('t', 'c1', 2)).toMatchObject({ name: 'first' });
      expect(await s.findToolCall('t', 'c1', 1)).toBeUndefined();
      expect(await s.findToolCall('t', 'u')).toBeUndefined(); // a user item with that message id is not a call
      expect(await s.findToolCall('nope', 'c1')).toBeUndefined();
    });

    it('keeps compaction summaries: latest within a bound; a re-save from the same source replaces in place', async () => {
      const s = await make();
      const commit = (n: number, summary?: { sourceThreadId: string; upTo: number; summary: string }) =>
        commitN(s, 'p', 1, n, summary ? { summary: { threadId: 'p', ...summary } } : {});
      await commit(0, { sourceThreadId: 'c1', upTo: 4, summary: 'first' });
      await commit(1, { sourceThreadId: 'c2', upTo: 9, summary: 'second' });
      expect(await s.latestSummary('p')).toEqual({ summary: 'second', upTo: 9 });
      expect(await s.latestSummary('p', 9)).toEqual({ summary: 'second', upTo: 9 });
      expect(await s.latestSummary('p', 8)).toEqual({ summary: 'first', upTo: 4 });
      expect(await s.latestSummary('p', 3)).toBeUndefined();
      await commit(2, { sourceThreadId: 'c2', upTo: 9, summary: 'second, retried' });
      expect(await s.latestSummary('p')).toEqual({ summary: 'second, retried', upTo: 9 });
      // A re-save keeps its source's place in the saving order: a later source stays the latest.
      await commit(3, { sourceThreadId: 'c1', upTo: 5, summary: 'first, again' });
      expect(await s.latestSummary('p')).toEqual({ summary: 'second, retried', upTo: 9 });
      expect(await s.latestSummary('p', 8)).toEqual({ summary: 'first, again', upTo: 5 });
      await commit(4, { sourceThreadId: 'c3', upTo: 2, summary: 'third' });
      expect(await s.latestSummary('p')).toEqual({ summary: 'third', upTo: 2 }); // latest saved, not the widest
      expect(await s.latestSummary('other')).toBeUndefined();
    });

    it('keeps archived ranges (rewinds) in commit order: a duplicate or failed commit adds none', async () => {
      const s = await make();
      await s.ensureThread({ threadId: 't', kind: 'root' });
      await commitN(s, 't', 4, 0);
      const note = (to: number, branch: number): StoredItem => ({
        messageId: `r${branch}`,
        item: { kind: 'rewind', to, branch },
      });
      const rewind = (sliceId: string, expectedLength: number, archive: ArchivedRange, branch: number) =>
        s.commit({
          threadId: 't',
          sliceId,
          expectedLength,
          items: [note(archive[0], branch)],
          result: result(sliceId, expectedLength + 1),
          archive,
        });
      expect(await rewind('r1', 4, [2, 4], 1)).toBe('committed');
      expect(await rewind('r1', 4, [2, 4], 1)).toBe('duplicate');
      await expect(rewind('late', 4, [1, 4], 2)).rejects.toBeInstanceOf(CommitConflictError);
      await commitN(s, 't', 2, 5);
      expect(await rewind('r2', 7, [1, 7], 2)).toBe('committed');
      expect((await s.getThread('t'))!.archived).toEqual([
        [2, 4],
        [1, 7],
      ]);
      expect(await s.length('t')).toBe(8);
    });

    it(`refuses a range past ${MAX_ARCHIVED_RANGES} per thread (ArchiveLimitError) and writes nothing of that commit`, async () => {
      const s = await make();
      await s.ensureThread({ threadId: 't', kind: 'root' });
      // Each rewind archives the item before its note: [2k, 2k + 1), the note at 2k + 1.
      for (let k = 0; k < MAX_ARCHIVED_RANGES; k++)
        await s.commit({
          threadId: 't',
          sliceId: `r${k}`,
          expectedLength: 2 * k,
          items: [
            user(`u${k}`, `item ${2 * k}`),
            { messageId: `n${k}`, item: { kind: 'rewind', to: 2 * k, branch: k + 1 } },
          ],
          result: result(`r${k}`, 2 * k + 2),
          archive: [2 * k, 2 * k + 1],
        });
      const length = 2 * MAX_ARCHIVED_RANGES;
      const staged = await s.stageInput(Buffer.from('kept'));
      const error = await s
        .commit({
          threadId: 't',
          sliceId: 'one-more',
          expectedLength: length,
          items: [user('x', 'lost')],
          result: result('one-more', length + 1),
          summary: { threadId: 't', sourceThreadId: 'c', upTo: 1, summary: 'lost' },
          consumedStaged: [staged.id],
          archive: [length - 1, length],
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ArchiveLimitError);
      expect(error).toMatchObject({ name: 'ArchiveLimitError', threadId: 't', limit: MAX_ARCHIVED_RANGES });
      expect((error as Error).message).toMatch(/^thread t has reached the most rewinds a thread keeps/);
      expect(await s.length('t')).toBe(length);
      expect(await s.findSlice('t', 'one-more')).toBeUndefined();
      expect(await s.latestSummary('t')).toBeUndefined();
      expect(await s.loadStaged(staged)).toBeDefined();
      const archived = (await s.getThread('t'))!.archived!;
      expect(archived).toHaveLength(MAX_ARCHIVED_RANGES);
      expect(archived.at(-1)).toEqual([length - 2, length - 1]);
      // A retried rewind that committed is still a duplicate, and the thread goes on without archiving.
      expect(
        await s.commit({
          threadId: 't',
          sliceId: 'r0',
          expectedLength: 0,
          items: [],
          result: result('r0', 2),
          archive: [0, 1],
        }),
      ).toBe('duplicate');
      expect(await commitN(s, 't', 1, length)).toBe('committed');
      expect((await s.getThread('t'))!.archived).toHaveLength(MAX_ARCHIVED_RANGES);
    });

    it('leaves out summaries that end inside hidden ranges, however many: nested, touching, thousands', async () => {
      const s = await make();
      const save = (sourceThreadId: string, upTo: number) =>
        s.commit({
          threadId: sourceThreadId,
          sliceId: 'end',
          expectedLength: 0,
          items: [],
          result: result('end', 0),
          summary: { threadId: 'p', sourceThreadId, upTo, summary: `up to ${upTo}` },
        });
      for (const [source, upTo] of [
        ['a', 3],
        ['b', 10],
        ['c', 6],
        ['d', 8],
      ] as const)
        await save(source, upTo);
      const latest = async (hidden: ArchivedRange[], maxUpTo?: number) =>
        (await s.latestSummary('p', maxUpTo, hidden))?.upTo;
      expect(await latest([])).toBe(8);
      expect(await latest([[7, 8]])).toBe(6); // `upTo` in (from, to]
      expect(await latest([[8, 9]])).toBe(8);
      expect(
        await latest([
          [4, 6],
          [6, 8],
        ]),
      ).toBe(10); // touching
      expect(
        await latest([
          [2, 12],
          [7, 8],
        ]),
      ).toBeUndefined(); // nested
      expect(
        await latest([
          [9, 10],
          [4, 5],
          [5, 6],
          [7, 8],
        ]),
      ).toBe(3); // in any order
      expect(await latest([[2, 5]], 9)).toBe(8);
      expect(await latest([[6, 8]], 9)).toBe(6);
      expect(await latest([[5, 8]], 9)).toBe(3);
      expect(
        await latest([
          [1, 1],
          [9, 3],
        ]),
      ).toBe(8); // empty and reversed ranges hide nothing
      // Thousands of disjoint ranges (a thread rewound that often before the bound, or many children's views).
      const many = Array.from({ length: 20_000 }, (_, i): ArchivedRange => [100 + 2 * i, 101 + 2 * i]);
      expect(await latest(many)).toBe(8);
      expect(await latest([...many, [7, 8]])).toBe(6);
      expect(await latest([[5, 6], ...many, [7, 8], [9, 10]])).toBe(3);
    });

    it('stages inputs until a commit consumes them; a duplicate or failed commit consumes none', async () => {
      const s = await make();
      const data = Buffer.from('ünïcødé 🚀 '.repeat(50_000));
      const a = await s.stageInput(data);
      const b = await s.stageInput(data);
      expect(a).toEqual({
        id: expect.any(String),
        sha256: createHash('sha256').update(data).digest('hex'),
        bytes: data.byteLength,
      });
      expect(b).toEqual({ ...a, id: expect.not.stringMatching(`^${a.id}$`) }); // equal content, separate lives
      expect(Buffer.from((await s.loadStaged(a))!).equals(data)).toBe(true);
      await expect(
        s.commit({
          threadId: 't',
          sliceId: 's0',
          expectedLength: 5,
          items: [],
          result: result('s0', 5),
          consumedStaged: [a.id],
        }),
      ).rejects.toBeInstanceOf(CommitConflictError);
      expect(await s.loadStaged(a)).toBeDefined();
      await s.commit({
        threadId: 't',
        sliceId: 's1',
        expectedLength: 0,
        items: [user('u', 'x')],
        result: result('s1', 1),
        consumedStaged: [a.id],
      });
      expect(await s.loadStaged(a)).toBeUndefined();
      expect(
        await s.commit({
          threadId: 't',
          sliceId: 's1',
          expectedLength: 0,
          items: [],
          result: result('s1', 0),
          consumedStaged: [b.id],
        }),
      ).toBe('duplicate');
      expect(await s.loadStaged(b)).toBeDefined();
      await s.discardStaged([b.id, 'never-staged']);
      await s.discardStaged([]);
      expect(await s.loadStaged(b)).toBeUndefined();
    });

    it('keeps a multi-MiB binary input byte for byte; what the caller does with its buffer afterwards changes nothing', async () => {
      const s = await make();
      const data = randomBytes(6 * 1024 * 1024 + 3);
      const view = new Uint8Array(data.buffer, data.byteOffset + 1, data.byteLength - 2); // an offset view, as callers pass
      const expected = Buffer.from(view);
      const ref = await s.stageInput(view);
      view.fill(0);
      expect(ref).toMatchObject({
        bytes: expected.byteLength,
        sha256: createHash('sha256').update(expected).digest('hex'),
      });
      const back = await s.loadStaged(ref);
      expect(back).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(back!).equals(expected)).toBe(true);
    });

    budgetLedgerContract(make);

    it('closes, and closing again is harmless', async () => {
      const s = await make();
      await commitN(s, 't', 1, 0);
      await s.close();
      await s.close();
    });
  });
}
