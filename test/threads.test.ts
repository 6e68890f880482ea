/**
 * Agent trees on the real dev server: children spawned as child workflows that inherit the parent's context, report
 * back as synthetic tool calls, close; deferral of reports behind a pending call; listing by search attributes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { ThreadClosedError } from '../src/inbox/errors';
import { searchAttributes } from '../src/workflows/definitions';
import { ScriptedModel } from '../src/model/scripted';
import { resultInput } from '../src/core/inputs';
import type { ToolContext } from '../src/tools/tool';
import { treeScript } from './fixtures/tree-script';
import {
  checkReplay,
  eventually,
  historyFile,
  recordingTool,
  render,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

const waits: ToolContext[] = [];
const childWait = recordingTool('child_wait', waits);
const manual = recordingTool('manual', waits);

let sys: TestSystem;
const model = new ScriptedModel(treeScript);

beforeAll(async () => {
  sys = await startTestSystem({ model, tools: [childWait, manual] });
});
afterAll(async () => {
  await sys?.shutdown();
});

async function settleAll(ids: string[]) {
  for (const id of ids) await sys.client.thread(id).waitForIdle({ settled: true });
}

describe('spawn_thread', () => {
  it('spawns three concurrent children whose reports reach the parent tied to their spawn calls', async () => {
    const root = await sys.client.startThread({ threadId: uid('tree') });
    await root.sendUserText('spawn report:A done;report:B done;report:C done');
    const first = await root.waitForIdle({ settled: true });
    expect(first.children).toHaveLength(3);
    const children = first.children;
    // Each child reports, then closes (without a report the parent still hears that it shut down).
    await eventually(
      async () => (await root.history()).filter((i) => i.kind === 'subscription_event').length === 6,
      60_000,
      'six reports',
    );
    await settleAll(children);
    const status = await root.waitForIdle({ settled: true });
    const items = await root.history();
    const lines = render(items);
    // Reports may arrive between the spawns: apart from them and the model's replies, the spawns are in order.
    const spawnLines = lines.filter((l) => !l.startsWith('event ') && !l.startsWith('assistant: '));
    expect(spawnLines).toEqual([
      'user: spawn report:A done;report:B done;report:C done',
      `call #1 spawn_thread {"instructions":"report:A done","child_of":["${root.threadId}"]}`,
      `result #1: Child thread is successfully spawned and has ID: ${children[0]}. You will be notified automatically when the child has anything to report. Make sure that you **do not** do the task assigned to the child thread.`,
      `call #2 spawn_thread {"instructions":"report:B done","child_of":["${root.threadId}"]}`,
      `result #2: Child thread is successfully spawned and has ID: ${children[1]}. You will be notified automatically when the child has anything to report. Make sure that you **do not** do the task assigned to the child thread.`,
      `call #3 spawn_thread {"instructions":"report:C done","child_of":["${root.threadId}"]}`,
      `result #3: Child thread is successfully spawned and has ID: ${children[2]}. You will be notified automatically when the child has anything to report. Make sure that you **do not** do the task assigned to the child thread.`,
    ]);
    const events = items.filter((i) => i.kind === 'subscription_event');
    expect(events).toHaveLength(6);
    const spawnCalls = items
      .filter((i) => i.kind === 'tool_call' && i.name === 'spawn_thread')
      .map((i) => (i.kind === 'tool_call' ? i.id : ''));
    for (const [n, child] of children.entries()) {
      const mine = events.filter((e) => e.kind === 'subscription_event' && e.childThreadId === child);
      expect(mine.map((e) => (e.kind === 'subscription_event' ? [e.toolCallId, e.result.content[0]] : []))).toEqual([
        [spawnCalls[n], { type: 'text', text: `Report from child thread: ${'ABC'[n]} done` }],
        [spawnCalls[n], { type: 'text', text: `Child thread with ID ${child} has shut down` }],
      ]);
      // The model sees receive_event__injected with the original spawn call's name and arguments.
      expect(mine[0]!.kind === 'subscription_event' && mine[0]!.invocation).toMatchObject({
        name: 'receive_event__injected',
        args: {
          original_tool_name: 'spawn_thread',
          original_tool_call_id: spawnCalls[n],
          original_args: { instructions: `report:${'ABC'[n]} done` },
        },
      });
    }
    expect(status.status).toBe('idle');

    // A child's own history starts with the seed that answers the inherited spawn call.
    const child = sys.client.thread(children[0]!);
    expect((await child.status()).status).toBe('closed');
    await expect(historyFile(await child.history(), { [children[0]!]: '<child A>' })).toMatchFileSnapshot(
      '__snapshots__/threads/child-report-close.txt',
    );
    // The child's first request was the parent's history through the spawn call, then the seed.
    const firstChildRequest = model.requests.find((r) => r.system.includes(`current thread ID is \`${children[0]}\``))!;
    expect(firstChildRequest.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_result']);
    await checkReplay(root, 'tree-three-children');
    await checkReplay(child, 'tree-child-report-close');
  });

  it('answers a child_of that does not match the thread stack with the reference error', async () => {
    const root = await sys.client.startThread({ threadId: uid('wrongstack') });
    await root.sendUserText('spawn spawn-wrong');
    const [child] = (await root.waitForIdle({ settled: true })).children;
    await sys.client.thread(child!).waitForIdle({ settled: true });
    const lines = render(await sys.client.thread(child!).history());
    expect(lines[2]).toBe(
      `result #2: Error: child_of ["${root.threadId}"] does not match the actual thread stack ["${root.threadId}", "${child}"]. You may be confused and think you are in the parent thread, but you are not. You are in thread ${child}. Do NOT spawn threads — focus on your assigned task.`,
    );
    expect((await sys.client.thread(child!).status()).children).toEqual([]);
  });

  it('refuses to close a root thread', async () => {
    const root = await sys.client.startThread({ threadId: uid('rootclose') });
    await root.sendUserText('close me');
    const status = await root.waitForIdle({ settled: true });
    expect(render(await root.history())[2]).toBe(
      'result #1: Error: cannot close the root thread. Only child threads can be closed.',
    );
    expect(status.status).toBe('idle');
  });

  it('drops inputs to a closed child', async () => {
    const root = await sys.client.startThread({ threadId: uid('closed') });
    await root.sendUserText('spawn close:bye');
    const [childId] = (await root.waitForIdle({ settled: true })).children;
    const child = sys.client.thread(childId!);
    await eventually(async () => (await child.status()).status === 'closed', 30_000, 'child closed');
    const before = await child.history();
    expect(await child.deliver(resultInput(childId!, 'whatever', 'late'))).toEqual({
      delivered: false,
      reason: 'closed',
    });
    await expect(child.sendUserText('hello?')).rejects.toBeInstanceOf(ThreadClosedError);
    expect(await child.history()).toEqual(before);
    await eventually(
      async () => (await root.history()).some((i) => i.kind === 'subscription_event'),
      30_000,
      'close report',
    );
    await root.waitForIdle({ settled: true });
    const report = (await root.history()).find((i) => i.kind === 'subscription_event');
    expect(report?.kind === 'subscription_event' && report.result.content[0]).toEqual({
      type: 'text',
      text: `Child thread with ID ${childId} has shut down. Report from child thread: bye`,
    });
  });

  it('lists threads by parent, kind and status through search attributes', async () => {
    const root = await sys.client.startThread({ threadId: uid('listing') });
    await root.sendUserText('spawn idle;idle');
    const { children } = await root.waitForIdle({ settled: true });
    await settleAll(children);
    const found = await eventually(
      async () => {
        const list = [];
        for await (const t of sys.client.listThreads({ parentThreadId: root.threadId, kind: 'child', status: 'idle' }))
          list.push(t);
        return list.length === 2 ? list : undefined;
      },
      30_000,
      'visibility',
    );
    expect(found.map((t) => t.threadId).sort()).toEqual([...children].sort());
    expect(found[0]).toMatchObject({ status: 'idle', kind: 'child', parentThreadId: root.threadId, running: true });
    const roots = [];
    for await (const t of sys.client.listThreads({ kind: 'root' })) if (t.threadId === root.threadId) roots.push(t);
    expect(roots).toHaveLength(1);
  });
});

describe('status search attribute', () => {
  it('is kept current by default and not written when turned off', async () => {
    const quiet = new AgentClient({
      client: sys.temporal,
      taskQueue: sys.taskQueue,
      store: sys.store,
      threadOptions: { statusSearchAttribute: false },
    });
    const loud = await sys.client.startThread({ threadId: uid('loud') });
    const silent = await quiet.startThread({ threadId: uid('silent') });
    for (const t of [loud, silent]) await t.sendUserText('call manual {}');
    for (const t of [loud, silent]) expect((await t.waitForIdle()).status).toBe('waiting_tool');
    const attr = async (t: typeof loud) =>
      (await t.workflow.describe()).typedSearchAttributes.get(searchAttributes.AgentStatus);
    expect(await attr(loud)).toBe('waiting_tool');
    expect(await attr(silent)).toBe('idle');
    const events = (await silent.workflow.fetchHistory()).events ?? [];
    // The one upsert there is the SDK's `TemporalChangeVersion` that goes with a patch marker (docs/upgrading.md).
    const upserts = events
      .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields)
      .filter(Boolean);
    expect(upserts.filter((f) => f && 'AgentStatus' in f)).toHaveLength(0);
    expect(upserts.length).toBeLessThanOrEqual(1);
  });
});

describe('deferral', () => {
  it('holds two reports behind a pending call and appends them after its result, in order, in one slice', async () => {
    const root = await sys.client.startThread({ threadId: uid('defer') });
    await root.sendUserText('spawn wait:first;wait:second');
    const { children } = await root.waitForIdle({ settled: true });
    const childWaits = await eventually(
      () => {
        const w = children.map((c) => waits.find((x) => x.threadId === c));
        return w.every(Boolean) ? (w as ToolContext[]) : undefined;
      },
      30_000,
      'children waiting',
    );
    await root.sendUserText('call manual {}');
    const pending = await root.waitForIdle();
    expect(pending.pendingCall?.name).toBe('manual');
    const slicesBefore = pending.slices;

    await sys.client.deliver(resultInput(childWaits[0]!.threadId, childWaits[0]!.toolCallId, 'go'));
    await eventually(async () => (await root.status()).deferred === 1, 30_000, 'first report deferred');
    await sys.client.deliver(resultInput(childWaits[1]!.threadId, childWaits[1]!.toolCallId, 'go'));
    await eventually(async () => (await root.status()).deferred === 2, 30_000, 'second report deferred');
    expect((await root.status()).slices).toBe(slicesBefore);

    const manualCall = waits.find((w) => w.threadId === root.threadId)!;
    await sys.client.deliver(resultInput(root.threadId, manualCall.toolCallId, 'manual done'));
    const after = await root.waitForIdle({ settled: true });
    expect(after.slices).toBe(slicesBefore + 1);
    expect(render(await root.history()).slice(-4)).toEqual([
      'result #3: manual done',
      'event #1: Report from child thread: first',
      'event #2: Report from child thread: second',
      'assistant: noted: Report from child thread: second',
    ]);
    await checkReplay(root, 'deferral-two-reports');
  });
});
