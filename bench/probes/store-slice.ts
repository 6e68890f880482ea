/**
 * `npx tsx bench/probes/store-slice.ts`: the store operations of one slice (find, ensure, length, chain, model view,
 * commit) for 100 threads × 40 slices on a real SQLite file, in the order the runtime makes them; µs per slice, each.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelView, threadChain } from '../../src/activities/history';
import type { StoredItem } from '../../src/core/types';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { runMain } from '../lib/main';

async function main() {
  const store = new SqliteConversationStore(join(mkdtempSync(join(tmpdir(), 'store-probe-')), 'store.sqlite'));
  const threads = 100;
  const slices = 40;
  const completion = 'x'.repeat(1200);
  const spent: Record<string, number> = {};
  const time = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const r = await f();
    spent[name] = (spent[name] ?? 0) + performance.now() - t0;
    return r;
  };
  const t0 = performance.now();
  for (let s = 0; s < slices; s++) {
    for (let i = 0; i < threads; i++) {
      const threadId = `thread-${i}`;
      const sliceId = `slice-${s}`;
      await time('findSlice', () => store.findSlice(threadId, sliceId));
      await time('ensureThread', () => store.ensureThread({ threadId, kind: 'root' }));
      const length = await time('length', () => store.length(threadId));
      const chain = await time('chain', () => threadChain(store, threadId));
      await time('view', () => modelView(store, chain));
      const items: StoredItem[] =
        s % 2 === 0
          ? [
              { messageId: `${sliceId}-u`, item: { kind: 'user', text: 'Is build 7 green?' } },
              { messageId: `${sliceId}-a`, item: { kind: 'assistant', text: completion } },
              { messageId: `${sliceId}-c`, item: { kind: 'tool_call', id: `call-${s}`, name: 'bench_tool', args: {} } },
            ]
          : [
              {
                messageId: `${sliceId}-r`,
                item: { kind: 'tool_result', id: `call-${s - 1}`, content: [{ type: 'text', text: 'green' }] },
              },
              { messageId: `${sliceId}-a`, item: { kind: 'assistant', text: completion } },
            ];
      const result = {
        sliceId,
        length: length + items.length,
        pendingCall: null,
        answeredCallIds: [],
        followUps: [],
        interrupted: false,
      };
      await time('commit', () => store.commit({ threadId, sliceId, expectedLength: length, items, result }));
    }
  }
  const n = threads * slices;
  const us = (ms: number) => ((ms * 1000) / n).toFixed(0);
  console.log(
    `µs per slice: ${us(performance.now() - t0)} (${Object.entries(spent)
      .map(([k, v]) => `${k} ${us(v)}`)
      .join(', ')})`,
  );
  await store.close();
}

runMain(main);
