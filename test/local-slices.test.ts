/**
 * Local slices (`localSliceBudgetMs`, decision 50): a slice that ends within its budget leaves one local-activity
 * marker and no activity events; one that streams past it is adopted by a regular activity on the running worker's
 * own queue, and a user text still interrupts it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { defineTool } from '../src/tools/tool';
import { toolResult } from '../src/tools/messages';
import { checkReplay, eventually, historyFile, render, startTestSystem, type TestSystem, uid } from './helpers';

const LONG = 'word '.repeat(200).trim();
const model = new ScriptedModel((req) => {
  const last = req.messages.at(-1)!;
  if (last.role === 'user' && last.text === 'write an essay') return { text: LONG, chunks: 200, delayMs: 50 };
  if (last.role === 'user' && last.text === 'check') return { toolCall: { name: 'instant', args: {} } };
  return { text: `ok: ${last.role === 'user' ? last.text : last.role}` };
});
const instant = defineTool({
  name: 'instant',
  description: 'answers at once',
  parameters: { type: 'object' },
  async execute(_args, ctx) {
    await ctx.send(toolResult(ctx, 'green'));
  },
});

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model, tools: [instant], threadOptions: { localSliceBudgetMs: 500 } });
});
afterAll(async () => sys?.shutdown());

type Event = {
  eventType?: unknown;
  markerRecordedEventAttributes?: { markerName?: string | null } | null;
  activityTaskScheduledEventAttributes?: {
    activityType?: { name?: string | null } | null;
    taskQueue?: { name?: string | null } | null;
  } | null;
};

it('runs a tool round trip as two local slices: two markers, no activity events', async () => {
  const thread = await sys.client.startThread({ threadId: uid('local') });
  await thread.sendUserText('check');
  await thread.waitForIdle({ settled: true });
  await expect(historyFile(await thread.history())).toMatchFileSnapshot('__snapshots__/local-slices/round-trip.txt');
  const events = ((await thread.workflow.fetchHistory()).events ?? []) as Event[];
  expect(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(2);
  expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
  await checkReplay(thread, 'local-slices-round-trip');
});

it('hands a slice past its budget to an adopting activity, which a user text interrupts', async () => {
  const thread = await sys.client.startThread({ threadId: uid('local-essay') });
  await thread.sendUserText('write an essay');
  await eventually(
    () => sys.seen.filter((e) => e.threadId === thread.threadId && e.type === 'text_delta').length >= 20,
    30_000,
    'streaming past the budget',
  );
  await thread.sendUserText('stop that');
  await thread.waitForIdle({ settled: true });
  const lines = render(await thread.history());
  const partial = lines[1]!.replace(/^assistant: /, '');
  expect(partial.length).toBeGreaterThan(0);
  expect(partial.length).toBeLessThan(LONG.length);
  expect(lines.slice(2)).toEqual(['user: <interrupt>stop that', 'assistant: ok: <interrupt>stop that']);
  const events = ((await thread.workflow.fetchHistory()).events ?? []) as Event[];
  const adopted = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'adoptSlice');
  expect(adopted).toHaveLength(1);
  expect(adopted[0]!.activityTaskScheduledEventAttributes!.taskQueue?.name).toContain(`${sys.taskQueue}/slices/`);
  await checkReplay(thread, 'local-slices-adopted-interrupt');
});
