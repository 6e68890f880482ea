/**
 * Deliveries tell the truth: an acknowledged delivery reports what the thread did with the input (accepted, held
 * back, or dropped and why), a server outage is a typed retryable error, and `waitForIdle` keeps its deadline.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resultInput } from '../src/core/inputs';
import type { InputMessage } from '../src/core/types';
import { deliverUpdate } from '../src/workflows/definitions';
import { startDevServer } from '../src/devserver/server';
import { TemporalUnavailableError, ThreadTimeoutError } from '../src/inbox/errors';
import { ScriptedModel } from '../src/model/scripted';
import { subscriptionEvent, userText } from '../src/tools/messages';
import { AgentClient } from '../src/client/agent-client';
import { defineTool, type ToolContext } from '../src/tools/tool';
import { toolResult } from '../src/tools/messages';
import { join } from 'node:path';
import { createAgentWorker } from '../src/worker/create-worker';
import {
  checkReplay,
  eventually,
  FAST_POLICY,
  historyFile,
  recordingTool,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

const calls: ToolContext[] = [];
// Answers through the acknowledged path while the slice that dispatched it is still running: the thread has not yet
// recorded the call as pending when the result arrives.
const instant = defineTool({
  name: 'instant',
  description: 'answers at once',
  parameters: { type: 'object' },
  execute(_a, ctx) {
    // Not awaited: the slice that dispatched the call ends first, as with any tool that answers later.
    void sys.client.deliver(toolResult(ctx, 'instant answer'), { acknowledge: true }).then((r) => acks.push(r));
  },
});
const acks: unknown[] = [];
const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user' && last.text.startsWith('call '))
    return { toolCall: { name: last.text.slice(5), args: {} } };
  return { text: `ok: ${last.role === 'user' ? last.text : last.role}` };
});

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model, tools: [recordingTool('wait', calls), instant] });
});
afterAll(async () => sys?.shutdown());

it('says accepted, dropped with the reason, or duplicate', async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack') });
  await thread.sendUserText('call wait');
  const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
  await thread.waitForIdle();

  const wrong = resultInput(thread.threadId, 'no-such-call', 'late');
  expect(await thread.deliver(wrong, { acknowledge: true })).toEqual({ delivered: false, reason: 'wrong_call' });
  // Events wait while a call is pending (docs/semantics.md §8): the answer is "held back", judged once the call is done.
  const event = subscriptionEvent({ threadId: thread.threadId, toolCallId: 'no-such-subscription' }, 'tick');
  expect(await thread.deliver(event, { acknowledge: true })).toEqual({
    delivered: true,
    acknowledged: true,
    deferred: true,
  });
  expect((await thread.status()).deferred).toBe(1);

  const right = resultInput(thread.threadId, call.toolCallId, 'the answer');
  expect(await thread.deliver(right, { acknowledge: true })).toEqual({ delivered: true, acknowledged: true });
  expect(await thread.deliver(right, { acknowledge: true })).toEqual({ delivered: false, reason: 'duplicate' });
  const done = await thread.waitForIdle({ settled: true });
  expect(done.dropped).toEqual({ wrong_call: 1, unknown_subscription: 1, duplicate: 1 });
  await expect(historyFile(await thread.history())).toMatchFileSnapshot('__snapshots__/delivery/acknowledged.txt');
});

it('answers a control input it drops as dropped, with the reason (not accepted)', async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack-control') });
  await thread.sendUserText('call wait');
  await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
  await thread.waitForIdle();
  // A choice for a call that is not the pending one: the thread drops it as wrong_call.
  const prompt: InputMessage = {
    id: uid('prompt'),
    threadId: thread.threadId,
    content: { type: 'tool_result', toolCallId: 'not-pending', content: [] },
    synthetic: {
      type: 'prompt',
      toolCallId: 'not-pending',
      prompt: { kind: 'oauth', authUrl: 'https://auth.example.com/start' },
    },
  };
  expect(await thread.deliver(prompt, { acknowledge: true })).toEqual({ delivered: false, reason: 'wrong_call' });
  expect((await thread.status()).dropped).toEqual({ wrong_call: 1 });
});

it("does not count the client's own resend as a dropped duplicate; another copy of the id it does", async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack-resend') });
  await thread.sendUserText('call wait');
  const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
  await thread.waitForIdle();
  const right = resultInput(thread.threadId, call.toolCallId, 'the answer');
  expect(await thread.deliver(right, { acknowledge: true })).toEqual({ delivered: true, acknowledged: true });
  await thread.waitForIdle({ settled: true });
  // What a client sends after its first attempt's run continued-as-new: the same input, marked as a resend.
  const handle = sys.temporal.workflow.getHandle(thread.threadId);
  expect(await handle.executeUpdate(deliverUpdate, { args: [right, { resend: true }] })).toEqual({
    accepted: false,
    reason: 'duplicate',
  });
  expect((await thread.status()).dropped).toEqual({});
  expect(await handle.executeUpdate(deliverUpdate, { args: [right] })).toEqual({
    accepted: false,
    reason: 'duplicate',
  });
  expect((await thread.status()).dropped).toEqual({ duplicate: 1 });
});

/** A client whose threads continue-as-new every `maxRunEvents` history events. */
const lowRunBound = (maxRunEvents: number) =>
  new AgentClient({
    client: sys.temporal,
    taskQueue: sys.taskQueue,
    store: sys.store,
    threadOptions: { maxRunEvents },
  });

it('answers an update Temporal delivers again to a later run as it answered it, not as a second delivery', async () => {
  // A low run bound: the run continues-as-new within a few texts.
  const client = lowRunBound(30);
  const thread = await client.startThread({ threadId: uid('ack-again') });
  const handle = sys.temporal.workflow.getHandle(thread.threadId);
  const first = userText(thread.threadId, 'first');
  const updateId = uid('update');
  expect(await handle.executeUpdate(deliverUpdate, { updateId, args: [first] })).toEqual({ accepted: true });
  const { runId } = await handle.describe();
  for (let i = 0; (await handle.describe()).runId === runId; i++) {
    await thread.sendUserText(`more ${i}`);
    await thread.waitForIdle();
  }
  // What a client's retry of its request does once the run that answered it has continued-as-new (temporalio/temporal
  // issue 6375): the same update id reaches the next run. The same answer, and nothing counted as dropped.
  expect(await handle.executeUpdate(deliverUpdate, { updateId, args: [first] })).toEqual({ accepted: true });
  expect((await thread.status()).dropped).toEqual({});
  // Another update with the same input is a second delivery: a duplicate, counted.
  expect(await handle.executeUpdate(deliverUpdate, { args: [first] })).toEqual({
    accepted: false,
    reason: 'duplicate',
  });
  const done = await thread.waitForIdle({ settled: true });
  expect(done.dropped).toEqual({ duplicate: 1 });
  const texts = (await thread.history()).flatMap((h) => (h.kind === 'user' ? [h.text] : []));
  expect(texts.filter((t) => t === 'first')).toHaveLength(1);
  await checkReplay(thread, 'ack-again');
});

it('keeps what a run hands to the next small, whatever update ids a sender chose', async () => {
  // A low run bound: the thread continues-as-new while the updates arrive, handing over the ones it answered.
  const client = lowRunBound(200);
  const thread = await client.startThread({ threadId: uid('ack-long-ids') });
  const handle = sys.temporal.workflow.getHandle(thread.threadId);
  // 300 deliveries, each under an update id of the server's maximum length (1,000 characters): 300 KB of ids.
  const messages = Array.from({ length: 300 }, (_, n) => userText(thread.threadId, `t${n}`));
  for (let batch = 0; batch < 30; batch++)
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const n = batch * 10 + i;
        const updateId = `${String(n).padStart(4, '0')}-${'u'.repeat(995)}`;
        const message = messages[n]!;
        // As a client's retry does when the run ended under its request: the same update id again.
        for (;;) {
          try {
            expect(await handle.executeUpdate(deliverUpdate, { updateId, args: [message] })).toMatchObject({
              accepted: true,
            });
            return;
          } catch (e) {
            if (!(e instanceof WorkflowUpdateFailedError) || !/completed before/.test(e.cause?.message ?? '')) throw e;
          }
        }
      }),
    );
  await thread.waitForIdle({ settled: true });
  const carried: string[] = [];
  for await (const run of sys.temporal.workflow.list({ query: `WorkflowId = "${thread.threadId}"` })) {
    const history = await sys.temporal.workflow.getHandle(thread.threadId, run.runId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    const args = payload
      ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { carried?: { acks?: unknown[] } })
      : {};
    if (args.carried?.acks) carried.push(JSON.stringify(args.carried.acks));
  }
  expect(carried.length, 'runs that were handed deliveries').toBeGreaterThan(0);
  // Each entry is its input's id and a short key of its update's, whatever the update ids: 300 KB of ids became this.
  expect(Math.max(...carried.map((c) => c.length))).toBeLessThanOrEqual(300 * 64);
  expect(carried.join('')).not.toContain('uuuuuuuu');
  // The first delivery's update again, answered 299 deliveries and several runs ago (Temporal's retry of a request
  // lands on the current run, temporalio/temporal issue 6375): answered as it was, not as a duplicate.
  const firstId = `0000-${'u'.repeat(995)}`;
  expect(await handle.executeUpdate(deliverUpdate, { updateId: firstId, args: [{ ...messages[0]! }] })).toEqual({
    accepted: true,
  });
  // The thread answers as before, and counted nothing as dropped.
  await thread.sendUserText('still there?');
  const status = await thread.waitForIdle({ settled: true });
  expect(status.dropped).toEqual({});
  expect(status.runs).toBeGreaterThan(2);
  await checkReplay(thread, 'ack-long-ids');
});

it('takes a run whose hand-made carried state holds junk for handed-over deliveries', async () => {
  // As a `temporal workflow start` user could send it: the run reads what it can and answers as a fresh thread.
  const threadId = uid('ack-junk');
  await sys.temporal.workflow.start('agentThread', {
    workflowId: threadId,
    taskQueue: sys.taskQueue,
    args: [{ threadId, carried: { acks: 'junk' } }],
  });
  const thread = sys.client.thread(threadId);
  expect(await thread.deliver(userText(threadId, 'hello'), { acknowledge: true })).toEqual({
    delivered: true,
    acknowledged: true,
  });
  const status = await thread.waitForIdle({ settled: true });
  expect(status.lastError).toBeUndefined();
  expect((await thread.history()).filter((h) => h.kind === 'user')).toEqual([{ kind: 'user', text: 'hello' }]);
});

it('waits for a free update slot when more acknowledged deliveries are in flight than the server allows', async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack-many') });
  await thread.sendUserText('hello');
  await thread.waitForIdle({ settled: true });
  // The dev server allows 10 updates in flight per workflow; 30 at once made the 11th a raw RESOURCE_EXHAUSTED.
  const texts = Array.from({ length: 30 }, (_, i) => `text ${i}`);
  const results = await Promise.all(
    texts.map((text, i) =>
      thread.deliver(
        { id: `${thread.threadId}-t${i}`, threadId: thread.threadId, content: { type: 'text', text } },
        { acknowledge: true },
      ),
    ),
  );
  for (const r of results) expect(r).toMatchObject({ delivered: true });
  await thread.waitForIdle({ settled: true });
  const users = (await thread.history()).flatMap((i) =>
    i.kind === 'user' ? [i.text.replace(/^<interrupt>/, '')] : [],
  );
  expect(users.slice(1).sort()).toEqual([...texts].sort());
  expect((await thread.status()).dropped).toEqual({});
  await checkReplay(thread, 'delivery-acknowledged-burst');
});

it('accepts a result that arrives before the thread has recorded its call', async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack-race') });
  await thread.sendUserText('call instant');
  await eventually(() => acks.length > 0, 30_000, 'the acknowledgement');
  expect(acks[0]).toEqual({ delivered: true, acknowledged: true });
  await thread.waitForIdle({ settled: true });
  await expect(historyFile(await thread.history())).toMatchFileSnapshot(
    '__snapshots__/delivery/result-before-call-recorded.txt',
  );
});

it('reports a closed thread as closed, and an unknown one as ThreadNotFoundError', async () => {
  const thread = await sys.client.startThread({ threadId: uid('ack-closed') });
  await thread.sendUserText('hello');
  await thread.waitForIdle();
  await thread.workflow.terminate('test');
  expect(await thread.deliver(resultInput(thread.threadId, 'c', 'x'), { acknowledge: true })).toEqual({
    delivered: false,
    reason: 'closed',
  });
  await expect(sys.client.deliver(resultInput(uid('nobody'), 'c', 'x'), { acknowledge: true })).rejects.toMatchObject({
    name: 'ThreadNotFoundError',
  });
});

it('falls back to the signal against a worker of release 0.1, which has no deliver update', async () => {
  // A rolling deploy: this client is 0.2, the thread's worker still runs 0.1's workflow code.
  const old = await startTestSystem({ model, tools: [recordingTool('wait', calls)], noWorker: true });
  const worker = await createAgentWorker({
    connection: old.connection,
    taskQueue: old.taskQueue,
    store: old.store,
    model,
    tools: [recordingTool('wait', calls)],
    completionPolicy: FAST_POLICY,
    workflowBundle: { codePath: join(__dirname, 'fixtures', 'bundles', 'v0.1', 'workflows-bundle.js') },
  });
  void worker.run();
  try {
    const thread = await old.client.startThread({ threadId: uid('ack-v01') });
    await thread.sendUserText('call wait');
    const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
    await thread.waitForIdle();
    const r = await thread.deliver(resultInput(thread.threadId, call.toolCallId, 'by signal'), { acknowledge: true });
    expect(r).toEqual({ delivered: true, acknowledged: false });
    await thread.waitForIdle({ settled: true });
    await expect(historyFile(await thread.history())).toMatchFileSnapshot(
      '__snapshots__/delivery/v01-worker-by-signal.txt',
    );
  } finally {
    await worker.shutdown();
    await old.shutdown();
  }
});

it('keeps the deadline of waitForIdle and cancels the wait', async () => {
  const thread = await sys.client.startThread({ threadId: uid('deadline') });
  await thread.sendUserText('call wait');
  await eventually(() => calls.find((c) => c.threadId === thread.threadId), 30_000, 'the call');
  const started = Date.now();
  const err = await thread.waitForIdle({ settled: true, timeoutMs: 1_500 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ThreadTimeoutError);
  // Not the server's long-poll length (tens of seconds), nor before the deadline.
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
  expect(Date.now() - started).toBeLessThan(10_000);
});

it('turns an unreachable server into TemporalUnavailableError', async () => {
  const server = await startDevServer({ ui: false });
  const other = await startTestSystem({ model, address: server.address, noWorker: true });
  try {
    const thread = await other.client.startThread({ threadId: uid('outage') });
    await server.stop();
    const err = await thread.deliver(resultInput(thread.threadId, 'c', 'x')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemporalUnavailableError);
    expect((err as TemporalUnavailableError).retryable).toBe(true);
  } finally {
    await other.shutdown().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}, 120_000);
