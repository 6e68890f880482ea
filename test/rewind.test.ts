/**
 * Rewinding a thread (issue 28 §2) on the real dev server, with the SQLite and the PostgreSQL store: the thread goes
 * back to a point and continues from there as if what came after never happened for the model, while the archived
 * items stay readable as a branch. A rewind with a call pending, past a subscription and a child (each ended, their
 * late inputs dropped `rewound`), to a point between a call and its result, while a slice runs, racing a tool result,
 * refusals (a thread at its bound of archived ranges among them), and forks of a rewound thread.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticInput } from '../src/core/inputs';
import { InvalidInputError, ThreadNotFoundError } from '../src/inbox/errors';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import type { ModelRequest } from '../src/model/provider';
import { type ArchivedRange, type ConversationStore, MAX_ARCHIVED_RANGES } from '../src/store/conversation-store';
import { PostgresConversationStore } from '../src/store/postgres';
import { subscriptionEvent, toolResult } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import { seededWith, selfOf, textOf } from './model-requests';
import { checkReplay, eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';
import { createTestDatabase } from './postgres';

/** Roots obey their user (`job`, `watch`, `spawn`, `slow …`); children wait on `child_wait`. */
function script(req: ModelRequest): ScriptedReply {
  const last = req.messages[req.messages.length - 1];
  if (seededWith(req, 'You are now INSIDE the thread that you requested to create.')) {
    return { toolCall: { name: 'child_wait', args: {} } };
  }
  if (last?.role === 'user') {
    if (last.text === 'spawn')
      return { toolCall: { name: 'spawn_thread', args: { instructions: 'wait', child_of: [selfOf(req)] } } };
    if (last.text === 'job') return { toolCall: { name: 'job', args: {} } };
    if (last.text === 'watch') return { toolCall: { name: 'watch', args: {} } };
    if (last.text.startsWith('slow')) return { text: `ack ${last.text}`, delayMs: 1500 };
    return { text: `ack ${last.text}` };
  }
  return { text: `noted ${textOf(last).slice(0, 40)}` };
}

let postgresUrl: string | undefined;
const stores: [string, () => Promise<ConversationStore | undefined>][] = [
  ['SQLite', async () => undefined],
  [
    'PostgreSQL',
    async () => new PostgresConversationStore({ connectionString: (postgresUrl = await createTestDatabase('rewind')) }),
  ],
];

describe.each(stores)('rewind on %s', (storeName, makeStore) => {
  let sys: TestSystem;
  let model: ScriptedModel;
  const jobs: ToolContext[] = [];
  const watches: ToolContext[] = [];
  const waits: ToolContext[] = [];
  const cancelled: string[] = [];
  beforeAll(async () => {
    model = new ScriptedModel(script);
    const store = await makeStore();
    sys = await startTestSystem({
      model,
      tools: [recordingTool('job', jobs), recordingTool('watch', watches), recordingTool('child_wait', waits)],
      toolLifecycle: [{ callCancelled: (_t, callId) => void cancelled.push(callId) }],
      ...(store && { store }),
    });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  const requestsOf = (threadId: string) => model.requests.filter((r) => selfOf(r) === threadId);
  const say = async (threadId: string, text: string) => {
    const t = sys.client.thread(threadId);
    await t.sendUserText(text);
    return t.waitForIdle();
  };
  const history = async (threadId: string, options: { branch?: number; inherited?: boolean } = {}) =>
    render(await sys.client.thread(threadId).history(options));
  /** The replay gate's recorded histories (issue 28 §2): one store's runs are enough, the workflow is the same. */
  const replays = async (threadId: string, name: string) => {
    if (storeName === 'SQLite') await checkReplay(sys.client.thread(threadId), name);
  };
  const dropsOf = async (threadId: string) => (await sys.client.thread(threadId).status()).dropped;
  /** Writes a thread's archived ranges into its record directly: the store refuses a commit past the bound. */
  const setArchived = async (threadId: string, ranges: ArchivedRange[]) => {
    const sql = 'UPDATE threads SET archived = $2 WHERE thread_id = $1';
    if (storeName === 'SQLite') {
      const db = new Database(sys.storePath);
      db.prepare(sql.replace(/\$\d/g, '?')).run(JSON.stringify(ranges), threadId);
      db.close();
    } else {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      await c.query(sql, [threadId, JSON.stringify(ranges)]);
      await c.end();
    }
  };

  it('goes back to a slice: the model sees the prefix, the rest is a readable branch, the thread goes on', async () => {
    const id = uid('rw');
    await say(id, 'a');
    await say(id, 'b');
    await say(id, 'c');
    const r = await sys.client.rewindThread(id, { to: 'slice-0' });
    expect(r).toEqual({ threadId: id, to: 2, branch: 1, archived: [2, 6] });
    expect(await history(id)).toEqual(['user: a', 'assistant: ack a', 'rewound to 2 (branch 1)']);
    expect(await history(id, { branch: 1 })).toEqual(['user: b', 'assistant: ack b', 'user: c', 'assistant: ack c']);

    await say(id, 'd');
    // For the model the archived items never happened, and neither did the rewind's note.
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'd']);
    expect(await history(id)).toEqual([
      'user: a',
      'assistant: ack a',
      'rewound to 2 (branch 1)',
      'user: d',
      'assistant: ack d',
    ]);
    const status = await sys.client.thread(id).status();
    expect(status.status).toBe('idle');
    expect(status.historyLength).toBe(9); // positions keep counting: nothing moved

    // A second rewind, by item count, to before the first one's point: a second branch, the first stays.
    const r2 = await sys.client.rewindThread(id, { to: 1 });
    expect(r2.branch).toBe(2);
    expect(r2.archived).toEqual([1, 9]);
    expect(await history(id)).toEqual(['user: a', 'rewound to 1 (branch 2)']);
    expect(await history(id, { branch: 1 })).toHaveLength(4);
    await say(id, 'e');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'e']);
  });

  it('with a call pending: the call is archived and its tool told, its late result dropped as rewound', async () => {
    const id = uid('rw-pending');
    await say(id, 'a');
    await say(id, 'job');
    const call = jobs.find((c) => c.threadId === id)!;
    expect((await sys.client.thread(id).status()).pendingCall?.id).toBe(call.toolCallId);

    await sys.client.rewindThread(id, { to: 2 });
    const status = await sys.client.thread(id).status();
    expect(status.status).toBe('idle');
    expect(status.pendingCall).toBeNull();
    await eventually(async () => (cancelled.includes(call.toolCallId) ? true : undefined));

    const late = await sys.client.deliver(toolResult(call, 'done at last'), { acknowledge: true });
    expect(late).toEqual({ delivered: false, reason: 'rewound' });
    expect((await dropsOf(id)).rewound).toBe(1);
    expect(await history(id)).toEqual(['user: a', 'assistant: ack a', 'rewound to 2 (branch 1)']);
    expect(await history(id, { branch: 1 })).toEqual(['user: job', `call #1 job {}`]);
    await replays(id, 'rewind-pending-call');
  });

  it('to a point between a call and its result: the call is answered as interrupted, as a fork there would', async () => {
    const id = uid('rw-between');
    await say(id, 'job');
    const call = jobs.find((c) => c.threadId === id)!;
    await sys.client.deliver(toolResult(call, 'job done'));
    await sys.client.thread(id).waitForIdle();
    expect(await history(id)).toEqual([
      'user: job',
      'call #1 job {}',
      'result #1: job done',
      'assistant: noted job done',
    ]);

    await sys.client.rewindThread(id, { to: 2 });
    expect(await history(id)).toEqual([
      'user: job',
      'call #1 job {}',
      'result #1: Tool call interrupted by user',
      'rewound to 2 (branch 1)',
    ]);
    await say(id, 'again');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['job', '', 'Tool call interrupted by user', 'again']);
  });

  it('past a subscription and a child: the subscription ends, the child is cancelled, their inputs dropped', async () => {
    const id = uid('rw-tree');
    await say(id, 'a');
    await say(id, 'watch');
    const watch = watches.find((c) => c.threadId === id)!;
    await sys.client.deliver(toolResult(watch, 'watching', { subscription: true }));
    await sys.client.thread(id).waitForIdle();
    await say(id, 'spawn');
    const spawned = await eventually(async () => waits.find((c) => c.rootThreadId === id));
    const childId = spawned.threadId;
    const before = await sys.client.thread(id).status();
    expect(Object.keys(before.subscriptions ?? {})).toEqual([watch.toolCallId]);
    const spawnCall = (await sys.client.thread(id).history()).find(
      (i) => i.kind === 'tool_call' && i.name === 'spawn_thread',
    );

    await sys.client.rewindThread(id, { to: 2 });
    const after = await sys.client.thread(id).status();
    expect(after.subscriptions ?? {}).toEqual({});
    // Temporal's own cancel ends the child's workflow.
    await eventually(async () => {
      const d = await sys.temporal.workflow.getHandle(childId).describe();
      return d.status.name === 'CANCELLED' ? true : undefined;
    });

    // An event of the archived subscription, and a report for the archived spawn call, arrive late: both dropped.
    expect(await sys.client.deliver(subscriptionEvent(watch, 'build 7 red'), { acknowledge: true })).toEqual({
      delivered: false,
      reason: 'rewound',
    });
    const report = syntheticInput(
      uid('report'),
      id,
      {
        type: 'thread_report',
        toolCallId: spawnCall?.kind === 'tool_call' ? spawnCall.id : '?',
        childThreadId: childId,
      },
      'late report',
    );
    expect(await sys.client.deliver(report, { acknowledge: true })).toEqual({ delivered: false, reason: 'rewound' });
    expect((await dropsOf(id)).rewound).toBe(2);
    expect(await history(id)).toEqual(['user: a', 'assistant: ack a', 'rewound to 2 (branch 1)']);
    await say(id, 'b');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'b']);
    await replays(id, 'rewind-subscription-child');
  });

  it('while a slice runs: the slice commits and is archived too; a user text sent after the rewind is kept', async () => {
    const id = uid('rw-running');
    await say(id, 'a');
    const t = sys.client.thread(id);
    await t.sendUserText('slow one');
    await eventually(async () => ((await t.status()).status === 'running' ? true : undefined));
    const rewound = sys.client.rewindThread(id, { to: 2 });
    // The rewind waits for the slice; this text arrives behind it and is taken after it.
    await eventually(async () => (await t.status()).queued >= 1 || undefined);
    await t.sendUserText('after');
    const r = await rewound;
    expect(r.archived[0]).toBe(2);
    await t.waitForIdle();
    expect(await history(id)).toEqual([
      'user: a',
      'assistant: ack a',
      'rewound to 2 (branch 1)',
      'user: after',
      'assistant: ack after',
    ]);
    // The user text interrupted the slow slice, which committed what it had streamed, if anything: archived with it.
    expect((await history(id, { branch: 1 }))[0]).toBe('user: slow one');
    expect(r.archived[1]).toBeGreaterThanOrEqual(3);
    await replays(id, 'rewind-mid-slice');
  });

  it('racing a tool result: the result is archived or dropped as rewound, never lost silently nor seen', async () => {
    const id = uid('rw-race');
    await say(id, 'a');
    await say(id, 'job');
    const call = jobs.find((c) => c.threadId === id)!;
    const [r, result] = await Promise.all([
      sys.client.rewindThread(id, { to: 2 }),
      sys.client.deliver(toolResult(call, 'raced'), { acknowledge: true }),
    ]);
    await sys.client.thread(id).waitForIdle();
    const branch = await history(id, { branch: r.branch });
    const inBranch = branch.includes('result #1: raced');
    const dropped = !result.delivered && result.reason === 'rewound';
    // Exactly one of the two: it committed before the rewind (and was archived with its call), or came after.
    expect([inBranch, dropped].filter(Boolean)).toHaveLength(1);
    expect((await history(id)).join('\n')).not.toContain('raced');
    await say(id, 'b');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'b']);
    await replays(id, 'rewind-racing-result');
  });

  it('refuses a point outside the history or inside a branch, an unknown thread, and "now"', async () => {
    const id = uid('rw-refuse');
    await say(id, 'a');
    await say(id, 'b');
    await expect(sys.client.rewindThread(id, { to: 4 })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.rewindThread(id, { to: 'now' })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.rewindThread(id, { to: 'slice-9' })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.rewindThread(uid('nobody'), { to: 0 })).rejects.toThrow(ThreadNotFoundError);
    await sys.client.rewindThread(id, { to: 1 });
    // Items 1..3 are archived: a point that would end on one of them is refused, for a rewind and for a fork.
    await expect(sys.client.rewindThread(id, { to: 3 })).rejects.toThrow(/inside branch 1/);
    await expect(sys.client.forkThread(id, { at: 2 })).rejects.toThrow(/inside branch 1/);
    await expect(sys.client.thread(id).history({ branch: 2 })).rejects.toThrow(InvalidInputError);
    // A hand-made rewind input the workflow refuses is dropped as malformed, and the thread goes on.
    const bad = await sys.client.deliver(
      { id: uid('bad'), threadId: id, content: { type: 'text', text: '' }, synthetic: { type: 'rewind', to: 2 } },
      { acknowledge: true },
    );
    expect(bad).toEqual({ delivered: false, reason: 'malformed' });
    await say(id, 'c');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'c']);
    await replays(id, 'rewind-refused');
  });

  it(`refuses a rewind past ${MAX_ARCHIVED_RANGES} archived ranges, in the client and in the thread; a fork goes on`, async () => {
    const id = uid('rw-bound');
    await say(id, 'a');
    await say(id, 'b');
    await sys.client.rewindThread(id, { to: 2 });
    await say(id, 'c');
    // As if rewound the most times a thread keeps: the real range, then stand-ins that hide nothing.
    const real = (await sys.client.thread(id).status()).historyLength;
    await setArchived(id, [[2, 4], ...Array.from({ length: MAX_ARCHIVED_RANGES - 1 }, (): ArchivedRange => [0, 0])]);
    const bound = /thread .+ has reached the most rewinds a thread keeps \(1000 archived ranges\): fork it/;
    await expect(sys.client.rewindThread(id, { to: 5 })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.rewindThread(id, { to: 5 })).rejects.toThrow(bound);
    // A hand-made rewind reaches the thread: the activity refuses it (REWIND_REFUSED), the thread drops it as
    // malformed and says why, and goes on.
    const bad = await sys.client.deliver(
      { id: uid('bad'), threadId: id, content: { type: 'text', text: '' }, synthetic: { type: 'rewind', to: 5 } },
      { acknowledge: true },
    );
    expect(bad).toEqual({ delivered: false, reason: 'malformed' });
    const status = await sys.client.thread(id).status();
    expect(status.lastError).toMatch(/^rewind to item 5 failed: thread .+ has reached the most rewinds/);
    expect(status.historyLength).toBe(real);
    await say(id, 'd');
    expect(requestsOf(id).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'c', 'ack c', 'd']);
    // A fork has no ranges of its own: it takes rewinds again.
    const fork = await sys.client.forkThread(id, { at: 'now', threadId: uid('rw-bound-fork') });
    await say(fork.threadId, 'e');
    expect(await sys.client.rewindThread(fork.threadId, { to: 0 })).toMatchObject({ to: 0, branch: 1 });
    await say(fork.threadId, 'f');
    expect(requestsOf(fork.threadId).at(-1)!.messages.map(textOf)).toEqual([
      'a',
      'ack a',
      'c',
      'ack c',
      'd',
      'ack d',
      'f',
    ]);
  });

  it('forks: one made before the rewind keeps what it saw, one made after sees the thread rewound', async () => {
    const id = uid('rw-forks');
    await say(id, 'a');
    await say(id, 'b');
    const early = await sys.client.forkThread(id, { at: 'now', threadId: uid('early') });
    await sys.client.rewindThread(id, { to: 2 });
    const late = await sys.client.forkThread(id, { at: 'now', threadId: uid('late') });
    await say(early.threadId, 'c');
    await say(late.threadId, 'c');
    expect(requestsOf(early.threadId).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'b', 'ack b', 'c']);
    expect(requestsOf(late.threadId).at(-1)!.messages.map(textOf)).toEqual(['a', 'ack a', 'c']);
    expect(await history(late.threadId, { inherited: true })).toEqual([
      'user: a',
      'assistant: ack a',
      'rewound to 2 (branch 1)',
      'user: c',
      'assistant: ack c',
    ]);
  });
});
