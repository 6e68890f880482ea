/**
 * Forking a thread (issue 28 §1) on the real dev server, with the SQLite and the PostgreSQL store: a fork after a user
 * text, with a call pending (interrupted, or kept for the caller), after a child's report, after a compaction, and a
 * fork of a fork. Each checks the fork's and the source's histories item by item, that both go on independently, and
 * that the fork's next completion sees exactly what the source would have seen at that point, plus the new input.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORKED_FROM } from '../src/client/fork';
import { InvalidInputError, ThreadNotFoundError } from '../src/inbox/errors';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import type { ConversationStore } from '../src/store/conversation-store';
import { PostgresConversationStore } from '../src/store/postgres';
import { toolResult } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import type { ModelRequest } from '../src/model/provider';
import { seededWith, selfOf, textOf } from './model-requests';
import { eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';
import { createTestDatabase } from './postgres';

/** Compaction threads summarize; children wait on a tool then report; roots obey their user. */
function script(req: ModelRequest): ScriptedReply {
  const self = selfOf(req);
  const last = req.messages[req.messages.length - 1];
  if (seededWith(req, 'You are now INSIDE a compaction thread')) {
    const seen = req.messages.filter((m) => m.role === 'user').map(textOf);
    return {
      toolCall: { name: 'close_thread', args: { thread_id: self, report_to_parent: `covers ${seen.join(',')}` } },
    };
  }
  if (seededWith(req, 'You are now INSIDE the thread that you requested to create.')) {
    if (last?.role === 'tool_result' && last.name === 'child_wait')
      return { toolCall: { name: 'report_to_parent', args: { report: `child got ${textOf(last)}` } } };
    if (last?.role === 'tool_result' && last.name === 'report_to_parent') return { text: 'child idle' };
    return { toolCall: { name: 'child_wait', args: {} } };
  }
  if (last?.role === 'user') {
    if (last.text === 'spawn')
      return { toolCall: { name: 'spawn_thread', args: { instructions: 'wait, then report', child_of: [self] } } };
    if (last.text === 'job') return { toolCall: { name: 'job', args: {} } };
    return { text: `ack ${last.text}` };
  }
  return { text: `noted ${textOf(last).slice(0, 60)}` };
}

interface Setup {
  sys: TestSystem;
  model: ScriptedModel;
  jobs: ToolContext[];
  waits: ToolContext[];
}

const stores: [string, () => Promise<ConversationStore | undefined>][] = [
  ['SQLite', async () => undefined],
  ['PostgreSQL', async () => new PostgresConversationStore({ connectionString: await createTestDatabase('fork') })],
];

describe.each(stores)('fork on %s', (_name, makeStore) => {
  let s: Setup;
  beforeAll(async () => {
    const model = new ScriptedModel(script);
    const jobs: ToolContext[] = [];
    const waits: ToolContext[] = [];
    const store = await makeStore();
    const sys = await startTestSystem({
      model,
      tools: [recordingTool('job', jobs), recordingTool('child_wait', waits)],
      ...(store && { store }),
    });
    s = { sys, model, jobs, waits };
  });
  afterAll(async () => {
    await s?.sys.shutdown();
  });

  const requestsOf = (threadId: string) => s.model.requests.filter((r) => selfOf(r) === threadId);
  const lastRequestOf = (threadId: string) => requestsOf(threadId).at(-1)!;
  const say = async (threadId: string, text: string) => {
    const t = s.sys.client.thread(threadId);
    await t.sendUserText(text);
    return t.waitForIdle();
  };
  const history = async (threadId: string, inherited = false) =>
    render(await s.sys.client.thread(threadId).history({ inherited }));

  it('after a user text: the prefix shared, the next completion sees it plus the new input, both go on alone', async () => {
    const src = uid('src');
    await say(src, 'a');
    await say(src, 'b');
    expect(await history(src)).toEqual(['user: a', 'assistant: ack a', 'user: b', 'assistant: ack b']);

    // By slice (the first slice ends after two items), with a first input.
    const fork = await s.sys.client.forkThread(src, { at: 'slice-0', threadId: uid('fork'), input: 'c' });
    await fork.waitForIdle();
    expect(await history(fork.threadId, true)).toEqual(['user: a', 'assistant: ack a', 'user: c', 'assistant: ack c']);
    // Only its own items are stored under the fork: the prefix is the source's.
    expect(await history(fork.threadId)).toEqual(['user: c', 'assistant: ack c']);
    expect(requestsOf(fork.threadId)).toHaveLength(1);
    expect(lastRequestOf(fork.threadId).messages).toEqual(
      requestsOf(src)[1]!
        .messages.slice(0, 2)
        .concat([{ role: 'user', text: 'c' }]),
    );

    // Both go on: nothing of one appears in the other.
    await say(src, 'd');
    await say(fork.threadId, 'e');
    expect(await history(src)).toEqual([
      'user: a',
      'assistant: ack a',
      'user: b',
      'assistant: ack b',
      'user: d',
      'assistant: ack d',
    ]);
    expect(await history(fork.threadId, true)).toEqual([
      'user: a',
      'assistant: ack a',
      'user: c',
      'assistant: ack c',
      'user: e',
      'assistant: ack e',
    ]);
    expect(lastRequestOf(fork.threadId).messages.map(textOf)).toEqual(['a', 'ack a', 'c', 'ack c', 'e']);
    expect(lastRequestOf(src).messages.map(textOf)).toEqual(['a', 'ack a', 'b', 'ack b', 'd']);

    // Linked: status, memo, and the search attribute lists the source's forks.
    const status = await fork.status();
    expect(status.forkedFrom).toEqual({ threadId: src, at: 2 });
    expect(status.kind).toBe('root');
    expect(status.parentThreadId).toBeUndefined();
    // The UI's current details name them too.
    const metadata = (await fork.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(metadata.currentDetails).toContain(`forked from \`${src}\` at item 2`);
    const described = await fork.workflow.describe();
    expect(described.memo?.forkedFrom).toEqual({ threadId: src, at: 2 });
    expect(described.typedSearchAttributes.get(FORKED_FROM)).toBe(src);
    const listed = await eventually(async () => {
      const ids: string[] = [];
      for await (const w of s.sys.temporal.workflow.list({ query: `ForkedFrom = '${src}'` })) ids.push(w.workflowId);
      return ids.length > 0 ? ids : undefined;
    });
    expect(listed).toEqual([fork.threadId]);

    // 'now' with no input: the whole history, idle, nothing run; an item count: exactly that many.
    const now = await s.sys.client.forkThread(src, { at: 'now' });
    expect((await now.status()).forkedFrom).toEqual({ threadId: src, at: 6 });
    expect((await now.status()).historyLength).toBe(0);
    expect(await history(now.threadId, true)).toEqual(await history(src));
    const three = await s.sys.client.forkThread(src, { at: 3 });
    expect(await history(three.threadId, true)).toEqual(['user: a', 'assistant: ack a', 'user: b']);
  });

  it('refuses a point outside the history, an unknown source and a thread id in use; a retried fork is the same', async () => {
    const src = uid('src');
    await say(src, 'a');
    await expect(s.sys.client.forkThread(src, { at: 3 })).rejects.toThrow(InvalidInputError);
    await expect(s.sys.client.forkThread(src, { at: -1 })).rejects.toThrow(InvalidInputError);
    await expect(s.sys.client.forkThread(src, { at: 'slice-9' })).rejects.toThrow(InvalidInputError);
    await expect(s.sys.client.forkThread(uid('nobody'), { at: 0 })).rejects.toThrow(ThreadNotFoundError);
    const other = uid('other');
    await say(other, 'x');
    await expect(s.sys.client.forkThread(src, { at: 1, threadId: other })).rejects.toThrow(InvalidInputError);
    await expect(s.sys.client.forkThread(src, { at: 1, threadId: src })).rejects.toThrow(InvalidInputError);
    const id = uid('fork');
    await s.sys.client.forkThread(src, { at: 1, threadId: id });
    const again = await s.sys.client.forkThread(src, { at: 1, threadId: id });
    expect(again.threadId).toBe(id);
    await expect(s.sys.client.forkThread(src, { at: 2, threadId: id })).rejects.toThrow(InvalidInputError);
    expect(await history(other)).toEqual(['user: x', 'assistant: ack x']);
  });

  it('with a call pending: interrupted in the fork by default, or kept for the caller; the source still waits', async () => {
    const src = uid('src');
    const s0 = await say(src, 'job');
    expect(s0.pendingCall?.name).toBe('job');
    const job = await eventually(() => s.jobs.find((j) => j.threadId === src));

    const interrupted = await s.sys.client.forkThread(src, { at: 'now', input: 'instead' });
    await interrupted.waitForIdle();
    expect(await history(interrupted.threadId, true)).toEqual([
      'user: job',
      'call #1 job {}',
      'result #1: Tool call interrupted by user',
      'user: instead',
      'assistant: ack instead',
    ]);
    expect((await interrupted.status()).pendingCall).toBeNull();
    // The tool ran once, for the source: the fork dispatched nothing.
    expect(s.jobs.filter((j) => j.toolCallId === job.toolCallId)).toHaveLength(1);

    // Interrupted without an input: idle at once, the result committed with its first slice.
    const quiet = await s.sys.client.forkThread(src, { at: 'now' });
    expect((await quiet.status()).status).toBe('idle');
    await say(quiet.threadId, 'later');
    expect((await history(quiet.threadId)).slice(0, 2)).toEqual([
      'result #1: Tool call interrupted by user',
      'user: later',
    ]);

    const kept = await s.sys.client.forkThread(src, { at: 'now', pendingCall: 'keep' });
    const keptStatus = await kept.status();
    expect(keptStatus.status).toBe('waiting_tool');
    expect(keptStatus.pendingCall).toEqual({ id: job.toolCallId, name: 'job', passive: false });
    await s.sys.client.deliver(toolResult({ threadId: kept.threadId, toolCallId: job.toolCallId }, 'fork result'));
    await kept.waitForIdle();
    expect(await history(kept.threadId, true)).toEqual([
      'user: job',
      'call #1 job {}',
      'result #1: fork result',
      'assistant: noted fork result',
    ]);

    // The source still waits, then takes its own result; no fork sees it.
    expect((await s.sys.client.thread(src).status()).pendingCall?.id).toBe(job.toolCallId);
    await s.sys.client.deliver(toolResult(job, 'source result'));
    await s.sys.client.thread(src).waitForIdle();
    expect(await history(src)).toEqual([
      'user: job',
      'call #1 job {}',
      'result #1: source result',
      'assistant: noted source result',
    ]);
    expect(await history(kept.threadId, true)).not.toContain('result #1: source result');
    expect(await history(interrupted.threadId, true)).not.toContain('result #1: source result');
  });

  it("after a child's report: the reports up to the point, none later; children and subscriptions not inherited", async () => {
    const src = uid('src');
    await say(src, 'spawn');
    // The only test that spawns: the first child_wait call is this source's child's.
    const wait = await eventually(() => s.waits[0]);
    const childId = wait.threadId;
    const beforeReport = (await s.sys.client.thread(src).status()).historyLength;
    const early = await s.sys.client.forkThread(src, { at: beforeReport });

    await s.sys.client.deliver(toolResult(wait, 'the build'));
    await eventually(async () => (await history(src)).some((l) => l.includes('child got the build')) || undefined);
    await s.sys.client.thread(src).waitForIdle();
    const after = await s.sys.client.forkThread(src, { at: 'now', input: 'next' });
    await after.waitForIdle();

    const srcHistory = await history(src);
    expect(await history(after.threadId, true)).toEqual([...srcHistory, 'user: next', 'assistant: ack next']);
    expect(srcHistory.filter((l) => l.startsWith('event ') && l.includes('child got the build'))).toHaveLength(1);
    // The early fork never hears of the report, which went to the source only.
    expect(await history(early.threadId, true)).toEqual(srcHistory.slice(0, beforeReport));
    expect((await history(early.threadId, true)).some((l) => l.includes('child got'))).toBe(false);
    // Children and subscriptions stay the source's.
    expect((await s.sys.client.thread(src).status()).children).toEqual([childId]);
    const st = await after.status();
    expect(st.children).toEqual([]);
    expect(st.subscriptions).toEqual({});
    // The fork's model view: the source's at the point, then the new input (the same text sent to the source shows it).
    await say(src, 'next');
    expect(lastRequestOf(after.threadId).messages).toEqual(lastRequestOf(src).messages);
  });

  it('after a compaction: the summary reused, not recomputed', async () => {
    const src = uid('src');
    for (const t of ['m1', 'm2', 'm3']) await say(src, t);
    await s.sys.client.thread(src).compact();
    await eventually(async () => {
      const st = await s.sys.client.thread(src).status();
      return st.compaction.completed === 1 && st.compaction.running === undefined;
    });
    await s.sys.client.thread(src).waitForIdle();
    const compactionsBefore = s.model.requests.filter((r) =>
      seededWith(r, 'You are now INSIDE a compaction thread'),
    ).length;

    const fork = await s.sys.client.forkThread(src, { at: 'now', input: 'after' });
    await fork.waitForIdle();
    const seen = lastRequestOf(fork.threadId).messages;
    expect(textOf(seen[0])).toMatch(/^\[Compacted conversation summary\]\ncovers m1,m2,m3/);
    expect(s.model.requests.filter((r) => seededWith(r, 'You are now INSIDE a compaction thread'))).toHaveLength(
      compactionsBefore,
    );
    expect((await fork.status()).compaction).toEqual({ completed: 0 });
    await say(src, 'after');
    expect(seen).toEqual(lastRequestOf(src).messages);
    // The whole history is still there under the summary.
    expect((await history(fork.threadId, true)).filter((l) => l.startsWith('user: '))).toEqual([
      'user: m1',
      'user: m2',
      'user: m3',
      'user: after',
    ]);

    // The fork compacts on its own: its compaction thread summarizes the fork's view (the source's summary, then its
    // own items), and the source's view keeps its own summary.
    await fork.compact();
    await eventually(async () => {
      const st = await fork.status();
      return st.compaction.completed === 1 && st.compaction.running === undefined;
    });
    await fork.waitForIdle();
    await say(fork.threadId, 'fork later');
    await say(src, 'source later');
    const forkSeen = lastRequestOf(fork.threadId).messages;
    expect(textOf(forkSeen[0])).toMatch(/^\[Compacted conversation summary\]\ncovers after$/);
    expect(forkSeen.at(-1)).toEqual({ role: 'user', text: 'fork later' });
    expect(forkSeen.some((m) => textOf(m).includes('covers m1'))).toBe(false);
    const srcSeen = lastRequestOf(src).messages;
    expect(textOf(srcSeen[0])).toMatch(/^\[Compacted conversation summary\]\ncovers m1,m2,m3/);
    expect(srcSeen.some((m) => textOf(m) === 'fork later' || textOf(m).includes('covers after'))).toBe(false);
  });

  it('a fork of a fork: three threads, one shared prefix each, independent turns', async () => {
    const src = uid('src');
    await say(src, 'a');
    const f1 = await s.sys.client.forkThread(src, { at: 'now', input: 'b' });
    await f1.waitForIdle();
    const f2 = await s.sys.client.forkThread(f1.threadId, { at: 1, input: 'c' });
    await f2.waitForIdle();
    await say(src, 'z');
    await say(f1.threadId, 'y');
    expect(await history(src)).toEqual(['user: a', 'assistant: ack a', 'user: z', 'assistant: ack z']);
    expect(await history(f1.threadId, true)).toEqual([
      'user: a',
      'assistant: ack a',
      'user: b',
      'assistant: ack b',
      'user: y',
      'assistant: ack y',
    ]);
    expect(await history(f2.threadId, true)).toEqual([
      'user: a',
      'assistant: ack a',
      'user: b',
      'user: c',
      'assistant: ack c',
    ]);
    expect(lastRequestOf(f2.threadId).messages.map(textOf)).toEqual(['a', 'ack a', 'b', 'c']);
    expect((await f2.status()).forkedFrom).toEqual({ threadId: f1.threadId, at: 1 });
    // A fork of a fork can be forked at 0: the source's prefix alone.
    const f3 = await s.sys.client.forkThread(f2.threadId, { at: 0 });
    expect(await history(f3.threadId, true)).toEqual(['user: a', 'assistant: ack a', 'user: b']);
  });
});
