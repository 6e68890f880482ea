/** The same contract for both stores, against a real SQLite file for the SQLite one. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SliceResult } from '../../src/core/slice-protocol';
import { CommitConflictError, type ConversationStore } from '../../src/store/conversation-store';
import { InMemoryConversationStore } from '../../src/store/memory';
import { SqliteConversationStore } from '../../src/store/sqlite';

const result = (sliceId: string, length: number): SliceResult => ({
  sliceId,
  length,
  pendingCall: null,
  answeredCallIds: [],
  followUps: [],
  interrupted: false,
});
const user = (id: string, text: string) => ({ messageId: id, item: { kind: 'user' as const, text } });

const dir = mkdtempSync(join(tmpdir(), 'store-test-'));
const stores: [string, () => ConversationStore][] = [
  ['in-memory', () => new InMemoryConversationStore()],
  ['sqlite', () => new SqliteConversationStore(join(dir, `${Math.random()}.sqlite`))],
];

describe.each(stores)('%s store', (_name, make) => {
  it('finds a tool call by id, optionally only before a position', async () => {
    const s = make();
    await s.ensureThread({ threadId: 't', kind: 'root' });
    const call = (id: string, name: string) => ({ messageId: `m-${id}`, item: { kind: 'tool_call' as const, id, name, args: { id } } });
    await s.commit({ threadId: 't', sliceId: 's1', expectedLength: 0, items: [user('u', 'hi'), call('c1', 'first'), user('v', 'more'), call('c2', 'second')], result: result('s1', 4) });
    expect(await s.findToolCall('t', 'c2')).toEqual({ kind: 'tool_call', id: 'c2', name: 'second', args: { id: 'c2' } });
    expect(await s.findToolCall('t', 'c2', 3)).toBeUndefined();
    expect(await s.findToolCall('t', 'c1', 2)).toMatchObject({ name: 'first' });
    expect(await s.findToolCall('t', 'u')).toBeUndefined(); // a user item with that message id is not a call
    expect(await s.findToolCall('nope', 'c1')).toBeUndefined();
    await s.close();
  });

  it('keeps compaction summaries: latest within a bound, a re-save from the same source replaces', async () => {
    const s = make();
    await s.ensureThread({ threadId: 'p', kind: 'root' });
    const commit = (n: number, summary?: { sourceThreadId: string; upTo: number; summary: string }) =>
      s.commit({ threadId: 'p', sliceId: `s${n}`, expectedLength: n, items: [user(`m${n}`, `m${n}`)], result: result(`s${n}`, n + 1), ...(summary && { summary: { threadId: 'p', ...summary } }) });
    await commit(0, { sourceThreadId: 'c1', upTo: 4, summary: 'first' });
    await commit(1, { sourceThreadId: 'c2', upTo: 9, summary: 'second' });
    expect(await s.latestSummary('p')).toEqual({ summary: 'second', upTo: 9 });
    expect(await s.latestSummary('p', 8)).toEqual({ summary: 'first', upTo: 4 });
    expect(await s.latestSummary('p', 3)).toBeUndefined();
    await commit(2, { sourceThreadId: 'c2', upTo: 9, summary: 'second, retried' });
    expect(await s.latestSummary('p')).toEqual({ summary: 'second, retried', upTo: 9 });
    expect(await s.latestSummary('other')).toBeUndefined();
    await s.close();
  });

  it('commits atomically, idempotently per slice, conditionally on length', async () => {
    const s = make();
    await s.ensureThread({ threadId: 't', kind: 'root' });
    expect(await s.commit({ threadId: 't', sliceId: 's1', expectedLength: 0, items: [user('a', 'one'), user('b', 'two')], result: result('s1', 2) })).toBe('committed');
    expect(await s.commit({ threadId: 't', sliceId: 's1', expectedLength: 0, items: [user('a', 'one')], result: result('s1', 1) })).toBe('duplicate');
    await expect(s.commit({ threadId: 't', sliceId: 's2', expectedLength: 1, items: [user('c', 'x')], result: result('s2', 2) })).rejects.toBeInstanceOf(CommitConflictError);
    expect((await s.load('t')).map((i) => i.messageId)).toEqual(['a', 'b']);
    expect(await s.findSlice('t', 's1')).toEqual(result('s1', 2));
    expect(await s.findSlice('t', 's2')).toBeUndefined();
    expect(await s.load('t', 1, 2)).toEqual([user('b', 'two')]);
    await s.close();
  });

  it('keeps thread records with parent and spawn point', async () => {
    const s = make();
    const root = await s.ensureThread({ threadId: 'r', kind: 'root' });
    expect(root).toEqual({ threadId: 'r', kind: 'root', rootThreadId: 'r', closed: false });
    await s.ensureThread({ threadId: 'c', kind: 'child', parentThreadId: 'r', rootThreadId: 'r', spawnOrder: 3, spawnToolCallId: 'tc' });
    await s.ensureThread({ threadId: 'c', kind: 'root' }); // existing record wins
    await s.markClosed('c');
    expect(await s.getThread('c')).toEqual({ threadId: 'c', kind: 'child', parentThreadId: 'r', rootThreadId: 'r', spawnOrder: 3, spawnToolCallId: 'tc', closed: true });
    expect(await s.getThread('nope')).toBeUndefined();
    await s.close();
  });
});

it('sqlite: survives reopening and is readable from a second connection', async () => {
  const file = join(dir, 'reopen.sqlite');
  const a = new SqliteConversationStore(file);
  await a.commit({ threadId: 't', sliceId: 's1', expectedLength: 0, items: [user('a', 'persisted')], result: result('s1', 1) });
  const reader = new SqliteConversationStore(file, { readonly: true });
  expect(await reader.load('t')).toEqual([user('a', 'persisted')]);
  await reader.close();
  await a.close();
  const b = new SqliteConversationStore(file);
  expect(await b.length('t')).toBe(1);
  await b.close();
});
