/**
 * `thread.follow()`: the committed history, then live events, with nothing committed missed or shown twice, however a
 * slice's commit races the follower. First each seam by hand (a real events endpoint or in-process hub, a real SQLite
 * store, slices emitted and committed at chosen moments); then real threads followed from many moments of their run,
 * in each way a client gets live events: the in-process hub (`startLocalSystem`, `startTestSystem`) and a worker's
 * endpoint in another client.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { Followed } from '../src/client/follow';
import type { ThreadHandle } from '../src/client/thread-handle';
import type { HistoryItem, StoredItem, ThreadEvent } from '../src/core/types';
import { LocalEventHub } from '../src/events/event-hub';
import { EventLog } from '../src/events/event-log';
import { startEventServer } from '../src/events/event-server';
import { startLocalSystem } from '../src/local-system';
import { ScriptedModel } from '../src/model/scripted';
import type { ConversationStore } from '../src/store/conversation-store';
import { SqliteConversationStore } from '../src/store/sqlite';
import { createAgentWorker } from '../src/worker/create-worker';
import { greenBuildTool, startTestSystem, uid } from './helpers';
import { result as sliceResult } from './store-contract';
import { itemLine, transcript } from './transcript';

/** An event without its thread id (each member of the union on its own). */
type Bare = ThreadEvent extends infer E ? (E extends unknown ? Omit<E, 'threadId'> : never) : never;

/** Follows until `stop` says so (checked after each step), or fails after `timeoutMs`. */
async function followUntil(
  thread: ThreadHandle,
  stop: (s: Followed) => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<Followed[]> {
  const got: Followed[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  for await (const s of thread.follow({ signal })) {
    got.push(s);
    if (await stop(s)) break;
  }
  return got;
}

const settledAt = (thread: ThreadHandle) => async (s: Followed) => {
  if ('history' in s || s.type !== 'status' || s.status !== 'idle') return false;
  const st = await thread.status();
  return st.status === 'idle' && st.queued === 0 && st.pendingCall === null;
};

describe('follow: each seam, by hand', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  let temporal: Client;
  let store: ConversationStore;
  let hub: LocalEventHub;
  let log: EventLog;
  let remote: AgentClient;
  let local: AgentClient;
  /** Runs once before the next history read of a follow (between its subscription and its read). */
  let beforeRead: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    temporal = new Client({ connection });
    const sqlite = new SqliteConversationStore(join(inject('scratchDir'), `follow-${randomUUID()}.sqlite`));
    // The store as the follower reads it, with a moment to act between its subscription and its first read.
    store = new Proxy(sqlite, {
      get(target, key) {
        if (key === 'getThread')
          return async (id: string) => {
            const hook = beforeRead;
            beforeRead = undefined;
            await hook?.();
            return target.getThread(id);
          };
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    hub = new LocalEventHub();
    log = new EventLog(hub, 20);
    const server = await startEventServer(log, {});
    cleanups.push(
      () => server.close(),
      () => sqlite.close(),
      () => connection.close(),
    );
    remote = new AgentClient({
      client: temporal,
      taskQueue: 'unused',
      store,
      eventsUrl: server.url,
      eventsToken: server.token,
    });
    local = new AgentClient({ client: temporal, taskQueue: 'unused', store, events: hub });
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** A thread's slices, emitted and committed as a worker's slice does. */
  function thread(threadId = uid('seam')) {
    let length = 0;
    let slices = 0;
    const emit = (e: Bare) => hub.emit({ threadId, ...e } as ThreadEvent);
    const commit = async (items: HistoryItem[]) => {
      const sliceId = `s${++slices}`;
      const stored: StoredItem[] = items.map((item, i) => ({ messageId: `${sliceId}-${i}`, item }));
      const result = sliceResult(sliceId, length + items.length);
      await store.commit({ threadId, sliceId, expectedLength: length, items: stored, result });
      length += items.length;
      return sliceId;
    };
    return {
      threadId,
      emit,
      commit,
      get length() {
        return length;
      },
      /** A slice's events up to its model's first words; returns where it builds. */
      start(inputs: Bare[], words: string) {
        const at = length;
        emit({ type: 'status', status: 'running' });
        inputs.forEach(emit);
        emit({ type: 'completion_started', sliceId: `live-${at}`, at });
        emit({ type: 'text_delta', text: words });
        return at;
      },
      /** The slice's end: its items committed, then its finish and the thread's status. */
      async finish(items: HistoryItem[], words = '') {
        if (words) emit({ type: 'text_delta', text: words });
        const sliceId = await commit(items);
        emit({ type: 'completion_finished', sliceId, length });
        emit({ type: 'status', status: 'idle' });
      },
    };
  }

  const idle = (s: Followed) => !('history' in s) && s.type === 'status' && s.status === 'idle';

  for (const [name, client] of [
    ['endpoint', () => remote],
    ['in-process hub', () => local],
  ] as const) {
    describe(name, () => {
      it('shows once a slice that commits between the subscription and the history read', async () => {
        const t = thread();
        await t.commit([{ kind: 'user', text: 'is 42 green?' }]);
        beforeRead = async () => {
          t.start([], 'Checking ');
          await t.finish([{ kind: 'assistant', text: 'Checking 42.' }], '42.');
        };
        const got = await followUntil(client().thread(t.threadId), idle);
        expect(transcript(got)).toEqual(['user: is 42 green?', 'assistant: Checking 42.']);
        expect(got.filter((s) => 'history' in s)).toHaveLength(2);
      });

      it('shows the inputs of a slice running when it attaches, which commits after the read', async () => {
        // How `tail` lost a tool result (CI, 0.11): the result was announced before the follower attached, and
        // committed only after it read the history.
        const t = thread();
        await t.commit([
          { kind: 'user', text: 'is 42 green?' },
          { kind: 'tool_call', id: 'c1', name: 'get_build_status', args: { build_id: '42' } },
        ]);
        t.start([{ type: 'tool_result', toolCallId: 'c1', text: 'Build 42: green' }], 'It is ');
        const follower = followUntil(client().thread(t.threadId), idle);
        // Finished once the follower has read the history (the hook runs just before).
        await new Promise<void>((resolve) => (beforeRead = async () => resolve()));
        await new Promise((r) => setTimeout(r, 50));
        await t.finish(
          [
            { kind: 'tool_result', id: 'c1', content: [{ type: 'text', text: 'Build 42: green' }] },
            { kind: 'assistant', text: 'It is green.' },
          ],
          'green.',
        );
        const got = await follower;
        expect(transcript(got)).toEqual([
          'user: is 42 green?',
          'call c1',
          'result c1: Build 42: green',
          'assistant: It is green.',
        ]);
      });

      it('reads from the store what committed without live events, before the next slice', async () => {
        const t = thread();
        await t.commit([{ kind: 'user', text: 'one' }]);
        const follower = followUntil(client().thread(t.threadId), idle);
        await new Promise<void>((resolve) => (beforeRead = async () => resolve()));
        await new Promise((r) => setTimeout(r, 50));
        await t.commit([{ kind: 'user', text: 'two (committed quietly)' }]);
        t.start([{ type: 'user_input', text: 'three' }], 'ok');
        await t.finish([
          { kind: 'user', text: 'three' },
          { kind: 'assistant', text: 'ok' },
        ]);
        expect(transcript(await follower)).toEqual([
          'user: one',
          'user: two (committed quietly)',
          'user: three',
          'assistant: ok',
        ]);
      });
    });
  }

  it('reads a slice from the store when the worker no longer holds its start', async () => {
    // The endpoint's log holds 20 events: a long slice's start is gone before the follower attaches.
    const t = thread();
    await t.commit([{ kind: 'user', text: 'write a lot' }]);
    t.start([], 'w0 ');
    for (let i = 1; i < 30; i++) t.emit({ type: 'text_delta', text: `w${i} ` });
    const follower = followUntil(remote.thread(t.threadId), idle);
    await new Promise<void>((resolve) => (beforeRead = async () => resolve()));
    await new Promise((r) => setTimeout(r, 50));
    const words = Array.from({ length: 31 }, (_, i) => `w${i} `).join('');
    await t.finish([{ kind: 'assistant', text: words }], 'w30 ');
    const got = await follower;
    expect(transcript(got)).toEqual(['user: write a lot', `assistant: ${words}`]);
    expect(got.filter((s) => !('history' in s) && s.type === 'text_delta')).toEqual([]);
  });
});

/**
 * A conversation of five slices: four calls of an async tool (its results arrive as signals, each starting a new
 * slice), every answer streamed in pieces.
 */
function conversationModel(): ScriptedModel {
  return new ScriptedModel((req) => {
    const results = req.messages.filter((m) => m.role === 'tool_result').length;
    if (results < 4)
      return {
        text: `Checking build ${results + 1}, then the next one. `.repeat(3),
        chunks: 8,
        delayMs: 8,
        toolCall: { name: 'get_build_status', args: { build_id: String(results + 1) } },
      };
    return { text: 'All four builds are green. '.repeat(3), chunks: 8, delayMs: 8 };
  });
}

/** Followers started every `spacingMs` while the thread runs; each must show exactly the committed history. */
async function followFromEveryMoment(client: AgentClient, followers = 12, spacingMs = 40) {
  const thread = client.thread(uid('followed'));
  await thread.sendUserText('Are builds 1 to 4 green?');
  const runs: Promise<Followed[]>[] = [];
  for (let i = 0; i < followers; i++) {
    runs.push(followUntil(thread, settledAt(thread)));
    await new Promise((r) => setTimeout(r, spacingMs));
  }
  const seen = await Promise.all(runs);
  const final = await thread.waitForIdle({ settled: true, timeoutMs: 30_000 });
  expect(final).toMatchObject({ status: 'idle', slices: 5 });
  const expected = (await thread.history()).map(itemLine).filter((l) => l !== undefined);
  expect(expected).toHaveLength(14);
  seen.forEach((steps, i) => expect(transcript(steps), `follower ${i}`).toEqual(expected));
  // Some followers attached mid-run: they saw live text, not just committed history.
  expect(seen.some((steps) => steps.some((s) => !('history' in s) && s.type === 'text_delta'))).toBe(true);
}

describe('follow: real threads, followed from many moments of their run', () => {
  it('startLocalSystem (the in-process hub)', async () => {
    const sys = await startLocalSystem({
      model: conversationModel(),
      tools: [greenBuildTool()],
      dataDir: join(inject('scratchDir'), `follow-local-${randomUUID().slice(0, 8)}`),
      devServer: { ui: false },
      stopOnSignal: false,
    });
    try {
      await followFromEveryMoment(sys.client);
    } finally {
      await sys.shutdown();
    }
  }, 120_000);

  it("a worker's events endpoint, from a client of its own", async () => {
    const sys = await startTestSystem({ model: conversationModel(), tools: [greenBuildTool()], noWorker: true });
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const worker = await createAgentWorker({
      connection,
      taskQueue: sys.taskQueue,
      store: sys.store,
      model: conversationModel(),
      tools: [greenBuildTool()],
      workflowBundle: { codePath: inject('workflowBundlePath') },
      eventsEndpoint: {},
    });
    const running = worker.run();
    try {
      const client = new AgentClient({
        client: sys.temporal,
        taskQueue: sys.taskQueue,
        store: sys.store,
        eventsUrl: worker.eventsUrl!,
        eventsToken: worker.eventsToken!,
      });
      await followFromEveryMoment(client);
    } finally {
      await worker.shutdown();
      await running;
      await connection.close();
      await sys.shutdown();
    }
  }, 120_000);
});
