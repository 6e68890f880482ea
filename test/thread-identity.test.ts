/**
 * A thread is its workflow (decision 83, issue 38 findings 1 and 3): a hand-made start that names another thread, claims
 * a parent that did not start it, or brings carried state of its own serves only its own workflow's thread, with
 * those claims left out and counted; a real child keeps its Temporal parent across continue-as-new; a slice activity
 * refuses to act on any thread but its own workflow's.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { ScriptedModel } from '../src/model/scripted';
import type { DroppedInputs, ThreadStatus } from '../src/core/types';
import type { ModelRequest } from '../src/model/provider';
import { InMemoryConversationStore } from '../src/store/memory';
import {
  checkReplay,
  eventually,
  render,
  startTestSystem,
  type TestSystem,
  type TestSystemOptions,
  uid,
} from './helpers';

const SECRET = 'the vault code is 7431';
let sys: TestSystem;

/** Root threads answer `ok`; the child of `spawn-and-sleep` sleeps a second, then reports. */
function script(request: ModelRequest) {
  const last = JSON.stringify(request.messages.at(-1) ?? '');
  if (last.includes('please spawn'))
    return { toolCall: { name: 'spawn_thread', args: { instructions: 'nap', child_of: [request.threadId] } } };
  if (last.includes('Slept')) return { toolCall: { name: 'report_to_parent', args: { report: 'woke up' } } };
  if (last.includes('instructions: nap')) return { toolCall: { name: 'sleep', args: { seconds: 1 } } };
  return { text: 'ok' };
}

const model = new ScriptedModel(script);

/**
 * What users run first, both ways: signals by name and SQLite (a worker and client of their own), and signals by kind
 * with `Title` written and another store (as `startLocalSystem` and `dev` send them).
 */
const CONFIGS: [string, () => Partial<TestSystemOptions>][] = [
  ['input signals, SQLite', () => ({})],
  [
    'signals by kind, Title, in-memory store',
    () => ({
      signalNames: 'by-kind',
      threadOptions: { titleSearchAttribute: true },
      store: new InMemoryConversationStore(),
    }),
  ],
];

/** Starts this describe's system before its tests and stops it after. */
function withSystem(options: () => Partial<TestSystemOptions>): void {
  beforeAll(async () => {
    sys = await startTestSystem({ model, ...options() });
  });
  afterAll(() => sys?.shutdown());
}

async function victim(): Promise<{ id: string; length: number }> {
  const id = uid('victim');
  await sys.client.sendUserText(id, SECRET);
  const st = await sys.client.thread(id).waitForIdle({ timeoutMs: 30_000 });
  return { id, length: st.historyLength };
}

async function failedTasks(id: string): Promise<number> {
  const { events } = await sys.temporal.workflow.getHandle(id).fetchHistory();
  return (events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
}

describe.each(CONFIGS)('%s', (name, config) => {
  withSystem(config);

  it('a hand-made start naming another thread, with its carried length, writes only into its own thread', async () => {
    const p1 = await victim();
    const before = render(await sys.client.thread(p1.id).history());
    const evil = uid('evil');
    await sys.temporal.workflow.start('agentThread', {
      workflowId: evil,
      taskQueue: sys.taskQueue,
      args: [{ threadId: p1.id, kind: 'root', carried: { length: p1.length, slices: 1 } }],
    });
    await sys.client.sendUserText(evil, 'forged user turn');
    const st = await sys.client.thread(evil).waitForIdle({ timeoutMs: 30_000 });
    expect(st.threadId).toBe(evil);
    expect(render(await sys.client.thread(evil).history())).toEqual(['user: forged user turn', 'assistant: ok']);
    // Both claims are left out, counted and named.
    expect(st.dropped.malformed).toBe(2);
    const drops = await sys.temporal.workflow.getHandle(evil).query<DroppedInputs>('drops');
    expect(drops.recent.map((d) => d.what).join('\n')).toMatch(/threadId .*a thread is its workflow[\s\S]*carried/);
    // The victim is untouched and keeps working.
    expect(render(await sys.client.thread(p1.id).history())).toEqual(before);
    await sys.client.sendUserText(p1.id, 'still there?');
    await sys.client.thread(p1.id).waitForIdle({ timeoutMs: 30_000 });
    expect(render(await sys.client.thread(p1.id).history())).toEqual([
      ...before,
      'user: still there?',
      'assistant: ok',
    ]);
    expect(await failedTasks(evil)).toBe(0);
    expect(await failedTasks(p1.id)).toBe(0);
    // Recorded for later releases' replay gate: the claims left out, as a release that shipped decision 83 ran them.
    const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    await checkReplay({ threadId: evil, workflow: sys.temporal.workflow.getHandle(evil) }, `forged-start-${slug}`);
  });

  it('a hand-made child naming another thread as its parent is a root of its own: no parent context, tools or record', async () => {
    const p1 = await victim();
    const spy = uid('spy');
    await sys.temporal.workflow.start('agentThread', {
      workflowId: spy,
      taskQueue: sys.taskQueue,
      args: [{ threadId: spy, kind: 'child', spawn: { parentThreadId: p1.id, toolCallId: 'x', order: 40 } }],
    });
    await sys.client.sendUserText(spy, 'what do you know?');
    const st = await sys.client.thread(spy).waitForIdle({ timeoutMs: 30_000 });
    expect(st.kind).toBe('root');
    expect(st.parentThreadId).toBeUndefined();
    expect(st.dropped.malformed).toBe(1);
    const seen = model.requests.filter((r) => r.threadId === spy);
    expect(seen.length).toBeGreaterThan(0);
    expect(JSON.stringify(seen)).not.toContain(SECRET);
    const record = await sys.store.getThread(spy);
    expect(record?.parentThreadId).toBeUndefined();
    expect(record?.rootThreadId).toBe(spy);
    expect(await failedTasks(spy)).toBe(0);
  });

  it('a real child keeps its Temporal parent across continue-as-new and reports to it', async () => {
    const parent = uid('parent');
    // Every run continues-as-new after each slice: the child's sleep spans two of its runs.
    const client = new AgentClient({
      client: sys.temporal,
      taskQueue: sys.taskQueue,
      store: sys.store,
      threadOptions: { ...config().threadOptions, maxRunEvents: 1 },
      ...(config().signalNames && { signalNames: config().signalNames }),
    });
    await client.sendUserText(parent, 'please spawn');
    const child = await eventually(
      async () => (await sys.client.thread(parent).status()).children[0],
      30_000,
      'child',
    ).catch(async (e) => {
      console.log(render(await sys.client.thread(parent).history()), await sys.client.thread(parent).status());
      throw e;
    });
    const report = await eventually(
      async () => {
        const h = render(await sys.client.thread(parent).history());
        return h.find((l) => l.includes('woke up'));
      },
      30_000,
      'report',
    ).catch(async (e) => {
      console.log(
        render(await sys.client.thread(child).history({ inherited: true })),
        await sys.client.thread(child).status(),
      );
      console.log(render(await sys.client.thread(parent).history()));
      throw e;
    });
    expect(report).toBeDefined();
    const childStatus = await sys.client.thread(child).status();
    expect(childStatus.parentThreadId).toBe(parent);
    expect(childStatus.dropped.malformed ?? 0).toBe(0);
    expect(childStatus.runs).toBeGreaterThan(1);
  });
});

describe("on 0.11's workflow code", () => {
  withSystem(() => ({}));

  it("on 0.11's workflow code, which still trusts a forged thread id, the slice refuses to commit into another thread", async () => {
    const p1 = await victim();
    const before = render(await sys.client.thread(p1.id).history());
    const old = await startTestSystem({
      model: new ScriptedModel(() => ({ text: 'forged answer' })),
      workflowBundlePath: join(__dirname, 'fixtures', 'bundles', 'v0.11', 'workflows-bundle.js'),
      store: sys.store,
    });
    try {
      const evil = uid('evil-old');
      await old.temporal.workflow.start('agentThread', {
        workflowId: evil,
        taskQueue: old.taskQueue,
        args: [{ threadId: p1.id, kind: 'root', carried: { length: p1.length, slices: 1 } }],
      });
      await old.temporal.workflow.getHandle(evil).signal('input', {
        id: 'forged-1',
        threadId: p1.id,
        content: { type: 'text', text: 'forged user turn' },
      });
      const st = await eventually(
        async () => {
          const s = await old.temporal.workflow.getHandle(evil).query<ThreadStatus>('status');
          return s.lastError ? s : undefined;
        },
        30_000,
        'refused slice',
      );
      expect(st.lastError).toMatch(/may act only on its own thread/);
      expect(render(await sys.client.thread(p1.id).history())).toEqual(before);
    } finally {
      // The store is the suite's: leave it open.
      await old.worker?.shutdown();
      await old.connection.close();
    }
  });
});
