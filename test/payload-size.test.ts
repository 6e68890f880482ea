/**
 * Temporal carries ids and counters, the store carries the words (DESIGN §5): the bytes a turn adds to the
 * thread's Temporal history must not grow with the conversation. Measured on the real dev server by encoding the
 * history events each turn appended.
 */
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { firstText } from '../src/model/projection';
import { ScriptedModel } from '../src/model/scripted';
import { toolResult } from '../src/tools/messages';
import { defineTool } from '../src/tools/tool';
import { startTestSystem, uid } from './helpers';

const TURNS = 30;
const filler = (tag: string, n: number) => `${tag}: ${'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27))}`.slice(0, n);

describe('Temporal payloads', () => {
  it('add the same bytes per turn whether the conversation is short or long', async () => {
    // Each turn: user text → ~600 B text + tool call → ~500 B result → ~1.2 KB answer.
    const model = new ScriptedModel((req) => {
      const last = req.messages[req.messages.length - 1]!;
      if (last.role === 'user') return { text: filler('plan', 600), toolCall: { name: 'fetch_log', args: { lines: 40 } }, chunks: 4 };
      return { text: filler(`answer about ${firstText(last.role === 'tool_result' ? last.content : []).slice(0, 10)}`, 1200), chunks: 8 };
    });
    const fetchLog = defineTool({
      name: 'fetch_log',
      description: 'fetch a build log',
      parameters: { type: 'object' },
      execute(_args, ctx) {
        setTimeout(() => void ctx.send(toolResult(ctx, filler('log', 500))), 1);
      },
    });
    const sys = await startTestSystem({ model, tools: [fetchLog] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('bytes') });
      const { EventType } = temporal.api.enums.v1;
      const SLICE_EVENTS = new Set([EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]);
      /** Bytes of all events, and of the slice activity's events alone (its input and result payloads). */
      const measure = async () => {
        const events = (await thread.workflow.fetchHistory()).events ?? [];
        let all = 0;
        let slice = 0;
        for (const e of events) {
          const n = temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
          all += n;
          if (e.eventType !== null && e.eventType !== undefined && SLICE_EVENTS.has(e.eventType)) slice += n;
        }
        return { all, slice };
      };
      const turns: { all: number; slice: number }[] = [];
      let before = await measure();
      for (let t = 1; t <= TURNS; t++) {
        await thread.sendUserText(`question ${t}`);
        await thread.waitForIdle({ settled: true });
        const after = await measure();
        turns.push({ all: after.all - before.all, slice: after.slice - before.slice });
        before = after;
      }
      const conversationBytes = JSON.stringify(await thread.history()).length;
      const early = turns.slice(1, 6);
      const late = turns.slice(TURNS - 5);
      const [earlySlice, lateSlice] = [Math.max(...early.map((t) => t.slice)), Math.max(...late.map((t) => t.slice))];
      const [earlyAll, lateAll] = [Math.min(...early.map((t) => t.all)), Math.min(...late.map((t) => t.all))];
      console.log(
        `Temporal history bytes per turn (turns 2-6 → ${TURNS - 4}-${TURNS}): slice activity events ${earlySlice} → ${lateSlice}, ` +
          `all events (fewest) ${earlyAll} → ${lateAll}; the conversation is ${conversationBytes} B`,
      );
      // Two slices per turn. Their payloads hold ids, counters and the turn's new inputs: only the counters' digits
      // may grow (one more digit in the length here). Carrying any message would add at least 500 B.
      expect(lateSlice - earlySlice).toBeLessThan(64);
      // The whole turn (signals, workflow tasks, the update) likewise; event ids take longer varints. The fewest of five
      // turns, because a busy machine can split a turn into more workflow tasks.
      expect(lateAll - earlyAll).toBeLessThan(256);
      expect(lateAll * 10).toBeLessThan(conversationBytes);
    } finally {
      await sys.shutdown();
    }
  });
});
