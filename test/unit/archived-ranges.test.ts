/**
 * Hiding archived ranges (rewinds, issue 28 §2; issue 38 finding 7): the merged, one-sweep computation against the
 * per-item scan it replaced (kept here verbatim as the oracle), over random range sets and over threads rewound at
 * random; and the bound on a thread's ranges (MAX_ARCHIVED_RANGES), refused by the `rewindThread` activity with
 * REWIND_REFUSED and by the client with InvalidInputError. The bound in each store: test/store-contract.ts.
 */
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRewind } from '../../src/activities/rewind';
import type { AgentClient } from '../../src/client/agent-client';
import { rewindThread } from '../../src/client/rewind';
import { REWIND_REFUSED } from '../../src/core/slice-protocol';
import type { HistoryItem, StoredItem } from '../../src/core/types';
import { InvalidInputError } from '../../src/inbox/errors';
import { coveringRange, endsInside, mergeRanges, withoutRanges } from '../../src/store/archived-ranges';
import { committedSince, lastVisibleItem, loadVisible, rewindPointError, visibleRanges } from '../../src/store/chain';
import {
  type ArchivedRange,
  type ConversationStore,
  MAX_ARCHIVED_RANGES,
  type ThreadRecord,
} from '../../src/store/conversation-store';
import { InMemoryConversationStore } from '../../src/store/memory';

// The oracle: src/store/chain.ts before issue 38 finding 7, and the stores' summary filter.
const oldHiddenBy = (ranges: readonly ArchivedRange[], position: number): ArchivedRange | undefined =>
  ranges.find(([from, to]) => position >= from && position < to);
const oldFilter = <T>(items: T[], from: number, ranges: readonly ArchivedRange[]): T[] =>
  ranges.length === 0 ? items : items.filter((_, i) => oldHiddenBy(ranges, from + i) === undefined);
const oldSummaryHidden = (hidden: readonly ArchivedRange[], upTo: number) =>
  hidden.some(([from, to]) => upTo > from && upTo <= to);
async function oldLoadVisible(store: ConversationStore, rec: ThreadRecord, from = 0, to?: number) {
  return oldFilter(await store.load(rec.threadId, from, to), from, visibleRanges(rec, to));
}
async function oldCommittedSince(store: ConversationStore, threadId: string, from: number, to?: number) {
  const rec = await store.getThread(threadId);
  const items = await store.load(threadId, from, to);
  const length = from + items.length;
  if (!rec) return { items, length };
  const ranges = visibleRanges(rec);
  return { items: items.filter((_, i) => oldHiddenBy(ranges, from + i) === undefined), length };
}
async function oldLastVisibleItem(
  store: ConversationStore,
  rec: ThreadRecord,
  upTo: number,
): Promise<HistoryItem | undefined> {
  const ranges = visibleRanges(rec, upTo);
  for (let p = upTo - 1; p >= 0; p--) {
    const range = oldHiddenBy(ranges, p);
    if (range) {
      p = range[0];
      continue;
    }
    const item = (await store.load(rec.threadId, p, p + 1))[0]?.item;
    if (item && item.kind !== 'rewind') return item;
  }
  return undefined;
}

const N = 40;
/** Any ranges at all: empty, reversed, overlapping, nested, touching, in any order. */
const anyRanges = fc.array(
  fc.tuple(fc.integer({ min: 0, max: N }), fc.integer({ min: 0, max: N })).map((r) => r as ArchivedRange),
  { maxLength: 25 },
);
const positions = Array.from({ length: N + 2 }, (_, i) => i);

describe('merged archived ranges hide what the per-item scan hid', () => {
  it('mergeRanges: sorted, disjoint, not touching, nothing empty, covering the same positions', () => {
    fc.assert(
      fc.property(anyRanges, (ranges) => {
        const input = structuredClone(ranges);
        const merged = mergeRanges(ranges);
        expect(ranges).toEqual(input); // the caller's ranges are left as they were
        merged.forEach(([from, to], i) => {
          expect(from).toBeLessThan(to);
          if (i > 0) expect(from).toBeGreaterThan(merged[i - 1]![1]);
        });
        for (const p of positions)
          expect(coveringRange(merged, p) !== undefined).toBe(oldHiddenBy(ranges, p) !== undefined);
      }),
      { numRuns: 500 },
    );
  });

  it('withoutRanges and endsInside: the same items and summaries as before, from any start', () => {
    fc.assert(
      fc.property(anyRanges, fc.integer({ min: 0, max: N }), fc.integer({ min: 0, max: N }), (ranges, from, n) => {
        const items = Array.from({ length: n }, (_, i) => `item ${from + i}`);
        expect(withoutRanges(items, from, ranges)).toEqual(oldFilter(items, from, ranges));
        const merged = mergeRanges(ranges);
        for (const upTo of positions) expect(endsInside(merged, upTo)).toBe(oldSummaryHidden(ranges, upTo));
      }),
      { numRuns: 500 },
    );
  });

  it('loadVisible and lastVisibleItem: the same as before for any record, any view', async () => {
    const store = new InMemoryConversationStore();
    await commitItems(store, 't', N);
    // A rewind note among the items: lastVisibleItem skips it.
    const withNote = new InMemoryConversationStore();
    await commitItems(withNote, 't', N, (p) => (p % 7 === 3 ? { kind: 'rewind', to: p - 1, branch: 1 } : undefined));
    await fc.assert(
      fc.asyncProperty(
        anyRanges,
        fc.integer({ min: 0, max: N }),
        fc.option(fc.integer({ min: 0, max: N + 3 }), { nil: undefined }),
        fc.boolean(),
        async (archived, from, to, notes) => {
          const s = notes ? withNote : store;
          const rec: ThreadRecord = { threadId: 't', kind: 'root', rootThreadId: 't', closed: false, archived };
          expect(await loadVisible(s, rec, from, to)).toEqual(await oldLoadVisible(s, rec, from, to));
          const upTo = to ?? N;
          expect(await lastVisibleItem(s, rec, upTo)).toEqual(await oldLastVisibleItem(s, rec, upTo));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('threads rewound at random: views, follows, last items and summaries as before', async () => {
    // An op: append n items, rewind to a point (a fraction of the length), or save a summary up to a point.
    const op = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), n: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('rewind' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant('summary' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), fc.nat(), async (ops, seed) => {
        const store = new InMemoryConversationStore();
        await store.ensureThread({ threadId: 't', kind: 'root' });
        const summaries: { upTo: number; n: number }[] = [];
        let slice = 0;
        for (const o of ops) {
          const length = await store.length('t');
          const rec = (await store.getThread('t'))!;
          if (o.kind === 'append') {
            await commitItems(store, 't', o.n, undefined, `s${slice++}`, length);
          } else if (o.kind === 'rewind') {
            const to = Math.floor(o.at * length);
            if (rewindPointError(rec, to, length) !== undefined) continue;
            const branch = (rec.archived?.length ?? 0) + 1;
            await store.commit({
              threadId: 't',
              sliceId: `s${slice}`,
              expectedLength: length,
              items: [{ messageId: `r${slice}`, item: { kind: 'rewind', to, branch } }],
              result: result(`s${slice++}`, length + 1),
              archive: [to, length],
            });
          } else {
            const upTo = Math.floor(o.at * length);
            const source = `c${summaries.length}`;
            summaries.push({ upTo, n: summaries.length });
            await store.commit({
              threadId: source,
              sliceId: 'end',
              expectedLength: 0,
              items: [],
              result: result('end', 0),
              summary: { threadId: 't', sourceThreadId: source, upTo, summary: source },
            });
          }
        }
        const rec = (await store.getThread('t'))!;
        const length = await store.length('t');
        // The thread's own view and a child's or fork's view up to some point.
        const cut = seed % (length + 1);
        for (const to of [undefined, cut]) {
          expect(await loadVisible(store, rec, 0, to)).toEqual(await oldLoadVisible(store, rec, 0, to));
          const hidden = visibleRanges(rec, to);
          const max = to ?? Number.MAX_SAFE_INTEGER;
          const expected = summaries.filter((s) => s.upTo <= max && !oldSummaryHidden(hidden, s.upTo)).pop();
          expect((await store.latestSummary('t', to, hidden))?.summary).toBe(expected && `c${expected.n}`);
        }
        const from = Math.floor(seed / 7) % (length + 1);
        expect(await committedSince(store, 't', from)).toEqual(await oldCommittedSince(store, 't', from));
        expect(await lastVisibleItem(store, rec, cut)).toEqual(await oldLastVisibleItem(store, rec, cut));
      }),
      { numRuns: 200 },
    );
  });
});

describe('the bound on a thread’s archived ranges', () => {
  /** A thread rewound `n` times, each time dropping its last item: 2n items, n disjoint ranges. */
  async function rewoundThread(store: ConversationStore, threadId: string, n: number): Promise<void> {
    await store.ensureThread({ threadId, kind: 'root' });
    for (let k = 0; k < n; k++) {
      await commitItems(store, threadId, 1, undefined, `a${k}`, 2 * k);
      await store.commit({
        threadId,
        sliceId: `r${k}`,
        expectedLength: 2 * k + 1,
        items: [{ messageId: `r${k}`, item: { kind: 'rewind', to: 2 * k, branch: k + 1 } }],
        result: result(`r${k}`, 2 * k + 2),
        archive: [2 * k, 2 * k + 1],
      });
    }
    // One more item after the last rewind: a point to rewind to.
    await commitItems(store, threadId, 1, undefined, 'last', 2 * n);
  }

  it('the activity refuses a rewind past it with REWIND_REFUSED, and commits nothing', async () => {
    const store = new InMemoryConversationStore();
    await rewoundThread(store, 't', MAX_ARCHIVED_RANGES);
    const length = await store.length('t');
    const rewind = createRewind(store, () => {});
    const input = { threadId: 't', sliceId: 't/slice-9999', to: length - 1, expectedLength: length, calls: [] };
    const error = await rewind(input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: REWIND_REFUSED, nonRetryable: true });
    expect((error as Error).message).toBe(
      `thread t has reached the most rewinds a thread keeps (${MAX_ARCHIVED_RANGES} archived ranges): fork it ` +
        '(forkThread) at the point to go on from there',
    );
    expect(await store.length('t')).toBe(length);
    expect(await store.findSlice('t', input.sliceId)).toBeUndefined();

    // A record read before another rewind took the last range: the store refuses the commit, the activity too.
    const stale = Object.assign(Object.create(store) as ConversationStore, {
      getThread: async (id: string) => {
        const rec = await store.getThread(id);
        return rec && { ...rec, archived: rec.archived!.slice(1) };
      },
    });
    const raced = await createRewind(stale, () => {})(input).catch((e: unknown) => e);
    expect(raced).toMatchObject({ type: REWIND_REFUSED, nonRetryable: true, message: (error as Error).message });
    expect(await store.length('t')).toBe(length);

    // One range fewer: the rewind is taken.
    const below = new InMemoryConversationStore();
    await rewoundThread(below, 'u', MAX_ARCHIVED_RANGES - 1);
    const n = await below.length('u');
    const outcome = await createRewind(below, () => {})({ ...input, threadId: 'u', to: n - 1, expectedLength: n });
    expect(outcome).toEqual({ length: n + 1, branch: MAX_ARCHIVED_RANGES, archivedCalls: [] });
    expect((await below.getThread('u'))!.archived).toHaveLength(MAX_ARCHIVED_RANGES);
  });

  it('the client refuses it with InvalidInputError before sending anything', async () => {
    const store = new InMemoryConversationStore();
    await rewoundThread(store, 't', MAX_ARCHIVED_RANGES);
    // A client that must not be used: the refusal comes from the store's record alone.
    const client = new Proxy({} as AgentClient, {
      get: (_, name) => {
        throw new Error(`the client was used (${String(name)})`);
      },
    });
    const error = await rewindThread(client, store, 't', { to: 2 * MAX_ARCHIVED_RANGES }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(/most rewinds a thread keeps \(1000 archived ranges\): fork it/);
  });
});

function result(sliceId: string, length: number) {
  return { sliceId, length, pendingCall: null, answeredCallIds: [], followUps: [], interrupted: false };
}

/** Commits `n` user items (or what `special` makes of a position) to a thread holding `from`. */
async function commitItems(
  store: ConversationStore,
  threadId: string,
  n: number,
  special?: (position: number) => HistoryItem | undefined,
  sliceId = `fill-${n}`,
  from = 0,
): Promise<void> {
  const items: StoredItem[] = Array.from({ length: n }, (_, i) => ({
    messageId: `${threadId}-${from + i}`,
    item: special?.(from + i) ?? { kind: 'user', text: `item ${from + i}` },
  }));
  await store.commit({ threadId, sliceId, expectedLength: from, items, result: result(sliceId, from + n) });
}
