/**
 * What every store's records for evals owe (`ConversationStore.evals`, issue 29 §1): slices in commit order (an eval
 * reads a thread from the store), scores stored, filtered and refused alike, and kept across a reopening of the store.
 * Run for each store by `test/eval-store.test.ts`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ConversationStore } from '../src/store/conversation-store';
import type { StoredItem } from '../src/core/types';
import { evaluateThreads } from '../src/evals';
import { ScriptedModel } from '../src/model/scripted';
import { InvalidScoreError } from '../src/store/eval-records';
import { commitN, result } from './store-contract';

/**
 * `open(name)` opens the store called `name`: the same name twice is the same store (a file, a schema) opened again, so
 * the reopening test can see what the first opening wrote. `reopens`: false for the memory store, which has no
 * second opening.
 */
export function evalRecordsContract(
  kind: string,
  open: (name: string) => ConversationStore | Promise<ConversationStore>,
  reopens = true,
): void {
  describe(`${kind} store: records for evals`, () => {
    const opened: ConversationStore[] = [];
    let n = 0;
    const make = async (name = `s${++n}_${Math.random().toString(36).slice(2, 8)}`) => {
      const s = await open(name);
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    it('lists a thread’s committed slices in commit order, not in id order, and none of other threads', async () => {
      const s = await make();
      // slice-10 sorts before slice-2 as text: the order must come from the commits.
      for (const [seq, from] of [
        [2, 0],
        [10, 2],
        [11, 3],
      ] as const) {
        await s.commit({
          threadId: 't',
          sliceId: `t/slice-${seq}`,
          expectedLength: from,
          items: [{ messageId: `m${seq}`, item: { kind: 'user', text: `${seq}` } }],
          result: result(`t/slice-${seq}`, from + 1),
        });
        if (seq === 2) await commitN(s, 't', 1, 1); // another slice id scheme in between
      }
      await commitN(s, 'other', 2, 0);
      const slices = await s.evals.slices('t');
      expect(slices.map((x) => [x.sliceId, x.result.length])).toEqual([
        ['t/slice-2', 1],
        ['s1', 2],
        ['t/slice-10', 3],
        ['t/slice-11', 4],
      ]);
      expect(await s.evals.slices('nobody')).toEqual([]);
    });

    it('evaluateThreads reads a thread from it: the rebuilt requests, the recorded tool call, the thread’s scores', async () => {
      const s = await make();
      await s.ensureThread({ threadId: 'e', kind: 'root' });
      const slice = (n: number, from: number, items: StoredItem[], appended: number) =>
        s.commit({
          threadId: 'e',
          sliceId: `e/slice-${n}`,
          expectedLength: from,
          items,
          result: { ...result(`e/slice-${n}`, from + items.length), appended },
        });
      await slice(
        0,
        0,
        [
          { messageId: 'u0', item: { kind: 'user', text: 'check 42' } },
          {
            messageId: 'e/slice-0-completion-0',
            item: { kind: 'tool_call', id: 'c1', name: 'status', args: { id: 42 } },
          },
        ],
        1,
      );
      await slice(
        1,
        2,
        [
          {
            messageId: 'c1-result',
            item: { kind: 'tool_result', id: 'c1', content: [{ type: 'text', text: 'green' }] },
          },
          { messageId: 'e/slice-1-completion-0', item: { kind: 'assistant', text: 'It is green.' } },
        ],
        1,
      );
      await s.evals.addScore({ threadId: 'e', name: 'merged', value: 1 });
      const model = new ScriptedModel((req) =>
        req.messages.at(-1)?.role === 'user'
          ? { toolCall: { name: 'status', args: { id: 42 } } }
          : { text: 'It is green.' },
      );
      const report = await evaluateThreads(s, { threads: ['e'], model });
      expect(model.requests.map((r) => r.messages.map((m) => m.role))).toEqual([
        ['user'],
        ['user', 'tool_call', 'tool_result'],
      ]);
      expect(report.totals).toMatchObject({
        evaluatedSlices: 2,
        toolMatchRate: 1,
        meanTextSimilarity: 1,
        divergedSlices: 0,
      });
      expect(report.threads[0]!.scores.map((x) => [x.name, x.value])).toEqual([['merged', 1]]);
    });

    it('stores scores of a thread and of a slice, lists them oldest first and filters by thread, slice and name', async () => {
      const s = await make();
      const a = await s.evals.addScore({ threadId: 't', name: 'merged', value: 1, note: 'PR #12' });
      expect(a).toMatchObject({ threadId: 't', name: 'merged', value: 1, note: 'PR #12' });
      expect(typeof a.recordedAt).toBe('number');
      await s.evals.addScore({ threadId: 't', sliceId: 't/slice-3', name: 'helpful', value: 0.25 });
      await s.evals.addScore({ threadId: 'u', name: 'merged', value: 0 });
      const all = await s.evals.scores();
      expect(all.map((x) => [x.threadId, x.sliceId, x.name, x.value, x.note])).toEqual([
        ['t', undefined, 'merged', 1, 'PR #12'],
        ['t', 't/slice-3', 'helpful', 0.25, undefined],
        ['u', undefined, 'merged', 0, undefined],
      ]);
      expect((await s.evals.scores({ threadId: 't' })).map((x) => x.name)).toEqual(['merged', 'helpful']);
      expect((await s.evals.scores({ name: 'merged' })).map((x) => x.threadId)).toEqual(['t', 'u']);
      expect((await s.evals.scores({ sliceId: 't/slice-3' })).map((x) => x.value)).toEqual([0.25]);
      expect(await s.evals.scores({ threadId: 'nobody' })).toEqual([]);
    });

    it('refuses non-finite values, blank names and overlong notes, and stores nothing for them', async () => {
      const s = await make();
      for (const bad of [
        { threadId: 't', name: 'x', value: Number.NaN },
        { threadId: 't', name: 'x', value: Number.POSITIVE_INFINITY },
        { threadId: 't', name: 'x', value: '1' as unknown as number },
        { threadId: 't', name: '  ', value: 1 },
        { threadId: '', name: 'x', value: 1 },
        { threadId: 't', name: 'x', value: 1, note: 'n'.repeat(2001) },
      ]) {
        await expect(s.evals.addScore(bad)).rejects.toThrow(InvalidScoreError);
      }
      expect(await s.evals.scores()).toEqual([]);
    });

    // The memory store has no second opening: the test is not defined for it (rather than skipped).
    if (reopens)
      it('keeps scores when the store is closed and opened again', async () => {
        const name = `reopen_${Math.random().toString(36).slice(2, 8)}`;
        const first = await make(name);
        await first.evals.addScore({ threadId: 't', sliceId: 't/slice-0', name: 'merged', value: 1 });
        await first.close();
        const again = await make(name);
        expect((await again.evals.scores({ threadId: 't' })).map((x) => [x.sliceId, x.name, x.value])).toEqual([
          ['t/slice-0', 'merged', 1],
        ]);
      });
  });
}
