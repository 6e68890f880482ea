/** What the model sees of a thread tree with compaction summaries (docs/semantics.md §12), on the in-memory store. */
import { describe, expect, it } from 'vitest';
import { callLookup, modelView, threadChain } from '../../src/activities/history';
import type { HistoryItem } from '../../src/core/types';
import { InMemoryConversationStore } from '../../src/store/memory';

const said = (items: readonly HistoryItem[]) =>
  items.map((i) => (i.kind === 'user' || i.kind === 'assistant' ? i.text : i.kind));

async function tree() {
  const store = new InMemoryConversationStore();
  const fill = async (
    threadId: string,
    texts: string[],
    summary?: { upTo: number; summary: string; source: string },
  ) => {
    const n = await store.length(threadId);
    await store.commit({
      threadId,
      sliceId: `${threadId}-${n}`,
      expectedLength: n,
      items: texts.map((text, i) => ({ messageId: `${threadId}-${n + i}`, item: { kind: 'user', text } })),
      result: {
        sliceId: `${threadId}-${n}`,
        length: n + texts.length,
        pendingCall: null,
        answeredCallIds: [],
        followUps: [],
        interrupted: false,
      },
      ...(summary && {
        summary: { threadId, sourceThreadId: summary.source, upTo: summary.upTo, summary: summary.summary },
      }),
    });
  };
  await store.ensureThread({ threadId: 'root', kind: 'root' });
  await fill('root', ['r0', 'r1', 'r2', 'r3']);
  // `early` was spawned at 2, before the root compacted up to 3; `late` at 4, after.
  await store.ensureThread({
    threadId: 'early',
    kind: 'child',
    parentThreadId: 'root',
    rootThreadId: 'root',
    spawnOrder: 2,
  });
  await store.ensureThread({
    threadId: 'late',
    kind: 'child',
    parentThreadId: 'root',
    rootThreadId: 'root',
    spawnOrder: 4,
  });
  await fill('early', ['e0']);
  await fill('late', ['l0', 'l1']);
  await fill('root', ['r4'], { upTo: 3, summary: 'R', source: 'c-root' });
  await store.ensureThread({
    threadId: 'grand',
    kind: 'child',
    parentThreadId: 'late',
    rootThreadId: 'root',
    spawnOrder: 2,
  });
  await fill('grand', ['g0']);
  const view = async (id: string) => said(await modelView(store, await threadChain(store, id)));
  return { store, fill, view };
}

describe('callLookup', () => {
  it('finds calls the view no longer shows: compacted away, or inherited up to the spawn point only', async () => {
    const store = new InMemoryConversationStore();
    await store.ensureThread({ threadId: 'root', kind: 'root' });
    const call = (id: string) => ({
      messageId: id,
      item: { kind: 'tool_call' as const, id, name: `tool_${id}`, args: {} },
    });
    await store.commit({
      threadId: 'root',
      sliceId: 'r0',
      expectedLength: 0,
      items: [call('old'), call('late')],
      result: { sliceId: 'r0', length: 2, pendingCall: null, answeredCallIds: [], followUps: [], interrupted: false },
      summary: { threadId: 'root', sourceThreadId: 'c', upTo: 2, summary: 'S' },
    });
    await store.ensureThread({
      threadId: 'kid',
      kind: 'child',
      parentThreadId: 'root',
      rootThreadId: 'root',
      spawnOrder: 1,
    });
    const rootChain = await threadChain(store, 'root');
    const lookup = callLookup(store, rootChain, await modelView(store, rootChain));
    expect(await lookup('old')).toEqual({ name: 'tool_old', args: {} }); // summarized, still found
    const kidChain = await threadChain(store, 'kid');
    const kidLookup = callLookup(store, kidChain, await modelView(store, kidChain));
    expect(await kidLookup('old')).toEqual({ name: 'tool_old', args: {} });
    expect(await kidLookup('late')).toBeUndefined(); // after the kid's spawn point: not its history
  });
});

describe('modelView', () => {
  it('puts a thread’s own summary first, then its items from where the summary ends', async () => {
    const { view } = await tree();
    expect(await view('root')).toEqual(['[Compacted conversation summary]\nR', 'r3', 'r4']);
  });

  it('keeps the exact inheritance of a child spawned before its parent compacted', async () => {
    const { view } = await tree();
    expect(await view('early')).toEqual(['r0', 'r1', 'e0']);
  });

  it('shows a child spawned after the compaction the summary and the parent’s tail up to its spawn point', async () => {
    const { view } = await tree();
    expect(await view('late')).toEqual(['[Compacted conversation summary]\nR', 'r3', 'l0', 'l1']);
    expect(await view('grand')).toEqual(['[Compacted conversation summary]\nR', 'r3', 'l0', 'l1', 'g0']);
  });

  it('lets a compacted child drop its ancestors entirely', async () => {
    const { view, fill } = await tree();
    await fill('late', ['l2'], { upTo: 2, summary: 'L', source: 'c-late' });
    expect(await view('late')).toEqual(['[Compacted conversation summary]\nL', 'l2']);
    // The grandchild was spawned at 2, within the summary of `late`: it starts from that summary.
    expect(await view('grand')).toEqual(['[Compacted conversation summary]\nL', 'g0']);
  });
});
