/**
 * Subscriptions on the real dev server: threaded events become temporary children that report back, associative
 * events are inlined, `final` and `cancel_subscription` end a subscription and later events are discarded.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { subscriptionEvent } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { treeScript } from './fixtures/tree-script';
import { watchTool } from './fixtures/watch-tool';
import { checkReplay, eventually, historyFile, render, startTestSystem, type TestSystem, uid } from './helpers';

const subs: ToolContext[] = [];
const watch = watchTool(subs);

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [watch] });
});
afterAll(async () => {
  await sys?.shutdown();
});

async function subscribedThread(prefix: string) {
  const thread = await sys.client.startThread({ threadId: uid(prefix) });
  await thread.sendUserText('call watch {"topic":"builds"}');
  const status = await thread.waitForIdle({ settled: true });
  const ctx = subs.find((s) => s.threadId === thread.threadId)!;
  expect(status.subscriptions).toEqual({ [ctx.toolCallId]: 'watch' });
  return { thread, ctx };
}

const eventsIn = async (threadId: string) =>
  (await sys.client.thread(threadId).history()).filter((i) => i.kind === 'subscription_event');

it('processes 20 threaded events in 20 temporary children; the parent only sees their reports', async () => {
  const { thread, ctx } = await subscribedThread('threaded');
  const before = render(await thread.history());
  for (let i = 0; i < 20; i++) await sys.client.deliver(subscriptionEvent(ctx, `tick ${i}`));
  await eventually(async () => (await eventsIn(thread.threadId)).length === 20, 90_000, '20 reports');
  const status = await thread.waitForIdle({ settled: true });
  expect(status.children).toHaveLength(20);

  const items = await thread.history();
  expect(render(items.slice(0, before.length))).toEqual(before);
  const reports = items.filter((i) => i.kind === 'subscription_event');
  const texts = reports.map((r) => (r.kind === 'subscription_event' ? r.result.content[0] : undefined));
  for (let i = 0; i < 20; i++) {
    const child = reports.find(
      (r) => r.kind === 'subscription_event' && JSON.stringify(r.result).includes(`processed tick ${i}"`),
    );
    expect(child, `report for tick ${i}`).toBeDefined();
    const childId = child!.kind === 'subscription_event' ? child!.childThreadId! : '';
    expect(child!.kind === 'subscription_event' && child!.toolCallId).toBe(ctx.toolCallId);
    expect(texts).toContainEqual({
      type: 'text',
      text: `An event from your subscription ${ctx.toolCallId} was processed by a child thread ${childId}. The subscription remains active. Report from the child:\nprocessed tick ${i}`,
    });
  }
  // Each report was a live event of the parent too, naming its child.
  const liveReports = sys.seen.filter((e) => e.threadId === thread.threadId && e.type === 'event');
  expect(liveReports).toHaveLength(20);
  expect(new Set(liveReports.map((e) => (e.type === 'event' ? e.childThreadId : undefined)))).toEqual(
    new Set(status.children),
  );
  // Everything else in the parent is the model's replies to those reports.
  expect(items.slice(before.length).every((i) => i.kind === 'subscription_event' || i.kind === 'assistant')).toBe(true);

  // One event child, whole: synthetic spawn, its seed, the injected call with the original call's name and args.
  const childId = status.children[0]!;
  const child = sys.client.thread(childId);
  const childItems = await child.history();
  const names = { [childId]: '<event child>', [thread.threadId]: '<parent>', [ctx.toolCallId]: '<watch call>' };
  await expect(historyFile(childItems, names)).toMatchFileSnapshot('__snapshots__/subscriptions/event-child.txt');
  expect((await child.status()).kind).toBe('event');
  await checkReplay(thread, 'subscription-20-threaded');
  await checkReplay(child, 'subscription-event-child');
}, 120_000);

it('inlines 20 associative events in order, then a final event ends the subscription', async () => {
  const { thread, ctx } = await subscribedThread('assoc');
  for (let i = 0; i < 20; i++) await sys.client.deliver(subscriptionEvent(ctx, `line ${i}`, { associative: true }));
  await sys.client.deliver(subscriptionEvent(ctx, 'last line', { associative: true, final: true }));
  await eventually(async () => (await eventsIn(thread.threadId)).length === 21, 60_000, '21 inline events');
  await sys.client.deliver(subscriptionEvent(ctx, 'after the end', { associative: true }));
  const status = await thread.waitForIdle({ settled: true });
  const events = render(await thread.history()).filter((l) => l.startsWith('event '));
  expect(events).toEqual([...Array.from({ length: 20 }, (_, i) => `event #1: line ${i}`), 'event #1: last line']);
  // Each event that entered history was also a live event, with the subscribing tool's name.
  const live = sys.seen.filter((e) => e.threadId === thread.threadId && e.type === 'event');
  expect(live).toEqual(
    [...Array.from({ length: 20 }, (_, i) => `line ${i}`), 'last line'].map((text) => ({
      threadId: thread.threadId,
      type: 'event',
      toolCallId: ctx.toolCallId,
      toolName: 'watch',
      text,
    })),
  );
  expect(status.subscriptions).toEqual({});
  expect(status.children).toEqual([]);
  expect(status.dropped.unknown_subscription).toBe(1);
  await checkReplay(thread, 'subscription-associative-final');
});

it('drops events after cancel_subscription', async () => {
  const { thread, ctx } = await subscribedThread('cancel');
  await thread.sendUserText(`call cancel_subscription {"tool_call_id":"${ctx.toolCallId}"}`);
  const status = await thread.waitForIdle({ settled: true });
  expect(status.subscriptions).toEqual({});
  expect(render(await thread.history()).slice(-2)).toEqual([
    `result #2: Subscription '${ctx.toolCallId}' cancelled successfully.`,
    `assistant: ok: Subscription '${ctx.toolCallId}' cancelled successfully.`,
  ]);
  const length = status.historyLength;
  await sys.client.deliver(subscriptionEvent(ctx, 'too late'));
  await sys.client.deliver(subscriptionEvent(ctx, 'too late', { associative: true }));
  const after = await thread.waitForIdle({ settled: true });
  expect(after.historyLength).toBe(length);
  expect(after.children).toEqual([]);
  expect(after.dropped.unknown_subscription).toBe(2);
  // The same call from a thread without that subscription is an error.
  const other = await sys.client.startThread({ threadId: uid('nosub') });
  await other.sendUserText(`call cancel_subscription {"tool_call_id":"${ctx.toolCallId}"}`);
  await other.waitForIdle({ settled: true });
  expect(render(await other.history())[2]).toBe(
    `result #1: Error: no active subscription found for tool call ID '${ctx.toolCallId}'`,
  );
});
