/**
 * Temporal carries ids and counters, the store carries the words (docs/architecture.md, "Data model"): the bytes a turn adds to the
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
const filler = (tag: string, n: number) =>
  `${tag}: ${'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27))}`.slice(0, n);

describe('Temporal payloads', () => {
  it('add the same bytes per turn whether the conversation is short or long', async () => {
    // Each turn: user text → ~600 B text + tool call → ~500 B result → ~1.2 KB answer.
    const model = new ScriptedModel((req) => {
      const last = req.messages[req.messages.length - 1]!;
      if (last.role === 'user')
        return { text: filler('plan', 600), toolCall: { name: 'fetch_log', args: { lines: 40 } }, chunks: 4 };
      return {
        text: filler(`answer about ${firstText(last.role === 'tool_result' ? last.content : []).slice(0, 10)}`, 1200),
        chunks: 8,
      };
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
      // A slice's events: its local activity's marker (release 0.3), or a regular activity's scheduled and completed.
      const SLICE_EVENTS = new Set([
        EventType.EVENT_TYPE_MARKER_RECORDED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
      ]);
      // How many workflow tasks a turn takes depends on timing (a signal may join a task already under way); every
      // other event is the same in every turn.
      const TASK_EVENTS = new Set([
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      ]);
      /** Bytes of all events, of all but workflow-task events, and of the slice activity's events alone. */
      const measure = async () => {
        const events = (await thread.workflow.fetchHistory()).events ?? [];
        let all = 0;
        let steady = 0;
        let slice = 0;
        for (const e of events) {
          const n = temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
          const type = e.eventType ?? 0;
          all += n;
          if (!TASK_EVENTS.has(type)) steady += n;
          if (SLICE_EVENTS.has(type)) slice += n;
        }
        return { all, steady, slice };
      };
      const turns: { all: number; steady: number; slice: number }[] = [];
      let before = await measure();
      for (let t = 1; t <= TURNS; t++) {
        await thread.sendUserText(`question ${t}`);
        await thread.waitForIdle({ settled: true });
        const after = await measure();
        turns.push({
          all: after.all - before.all,
          steady: after.steady - before.steady,
          slice: after.slice - before.slice,
        });
        before = after;
      }
      const conversationBytes = JSON.stringify(await thread.history()).length;
      const early = turns.slice(1, 6);
      const late = turns.slice(TURNS - 5);
      const most = (ts: typeof turns, k: 'all' | 'steady' | 'slice') => Math.max(...ts.map((t) => t[k]));
      const [earlySlice, lateSlice] = [most(early, 'slice'), most(late, 'slice')];
      const [earlySteady, lateSteady] = [most(early, 'steady'), most(late, 'steady')];
      const [earlyAll, lateAll] = [most(early, 'all'), most(late, 'all')];
      console.log(
        `Temporal history bytes per turn, most of turns 2-6 → ${TURNS - 4}-${TURNS}: slice events ${earlySlice} → ${lateSlice}, ` +
          `all but workflow tasks ${earlySteady} → ${lateSteady}, all ${earlyAll} → ${lateAll}; the conversation is ${conversationBytes} B`,
      );
      // Two slices per turn. Their payloads hold ids, counters and the turn's new inputs: only the counters' digits
      // may grow (one more digit in the length here). Carrying any message would add at least 500 B.
      expect(earlySlice).toBeGreaterThan(0);
      expect(lateSlice - earlySlice).toBeLessThan(64);
      // Every other event likewise (signals, the update, the status upserts); event ids take longer varints.
      expect(lateSteady - earlySteady).toBeLessThan(256);
      // Workflow-task events vary in number with timing, not with the conversation: the whole turn stays far below it.
      expect(lateAll * 10).toBeLessThan(conversationBytes);
    } finally {
      await sys.shutdown();
    }
  });
});
