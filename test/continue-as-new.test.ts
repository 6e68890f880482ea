/**
 * Continue-as-new on a dev server whose threshold is lowered to a few dozen history events: a thread goes through
 * several runs and keeps its children, subscriptions and dedup state; no event is lost or doubled.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../src/devserver/server';
import { resultInput } from '../src/core/inputs';
import { ScriptedModel } from '../src/model/scripted';
import { subscriptionEvent } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { treeScript } from './fixtures/tree-script';
import { watchTool } from './fixtures/watch-tool';
import { checkReplay, eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';

const calls: ToolContext[] = [];
const watch = watchTool(calls);
const childWait = recordingTool('child_wait', calls);

let server: DevServer;
let sys: TestSystem;
beforeAll(async () => {
  server = await startDevServer({ ui: false, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 40 } });
  sys = await startTestSystem({
    model: new ScriptedModel(treeScript),
    tools: [watch, childWait],
    address: server.address,
  });
});
afterAll(async () => {
  await sys?.shutdown();
  await server?.stop();
});

it('keeps children, subscriptions and dedup state across at least three runs', async () => {
  const thread = await sys.client.startThread({ threadId: uid('can') });
  await thread.sendUserText('spawn wait:child report', 'first-message');
  const { children } = await thread.waitForIdle({ settled: true });
  await thread.sendUserText('call watch {}');
  await thread.waitForIdle({ settled: true });
  const sub = calls.find((c) => c.threadId === thread.threadId)!;

  // Drive the thread until it has gone through at least three continue-as-new (bounded, in case it never does).
  let messages = 0;
  while ((await thread.status()).runs < 4 && messages < 60) {
    await thread.sendUserText(`message ${messages++}`);
    await thread.waitForIdle({ settled: true });
  }
  const mid = await thread.status();
  expect(mid.runs).toBeGreaterThanOrEqual(4);
  expect(mid.children).toEqual(children);
  expect(mid.subscriptions).toEqual({ [sub.toolCallId]: 'watch' });

  // Dedup state survived: the very first message, resent with its id, is dropped.
  await thread.sendUserText('spawn wait:child report', 'first-message');
  // Events and the child's report reach the thread across runs, each exactly once.
  for (let i = 0; i < 10; i++) await sys.client.deliver(subscriptionEvent(sub, `event ${i}`, { associative: true }));
  const childCall = await eventually(() => calls.find((c) => c.threadId === children[0]), 30_000, 'child call');
  await sys.client.deliver(resultInput(childCall.threadId, childCall.toolCallId, 'go'));
  await eventually(
    async () => render(await thread.history()).some((l) => l.includes('Report from child thread: child report')),
    60_000,
    'report',
  );
  const end = await thread.waitForIdle({ settled: true });
  expect(end.dropped.duplicate).toBe(1);

  const lines = render(await thread.history());
  for (let i = 0; i < messages; i++) expect(lines.filter((l) => l === `user: message ${i}`)).toHaveLength(1);
  for (let i = 0; i < 10; i++)
    expect(lines.filter((l) => l.startsWith('event ') && l.endsWith(`: event ${i}`))).toHaveLength(1);
  expect(
    lines.filter((l) => l.startsWith('event ') && l.includes('Report from child thread: child report')),
  ).toHaveLength(1);
  expect(lines.filter((l) => l.startsWith('user: spawn'))).toHaveLength(1);
  expect(end.runs).toBeGreaterThanOrEqual(4);
  await checkReplay(thread, 'continue-as-new-runs', server.address);
}, 120_000);
