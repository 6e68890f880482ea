/**
 * Compaction (docs/semantics.md §12) on the real dev server: a thread driven past a small context window three times
 * keeps working on summaries, a child spawned before a compaction keeps exactly what it inherited, and reports and
 * events whose original calls were compacted away still arrive, once.
 */
import { describe, expect, it } from 'vitest';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import { subscriptionEvent, subscriptionStart, toolResult } from '../src/tools/messages';
import type { ToolContext } from '../src/tools/tool';
import type { ModelRequest } from '../src/model/provider';
import { seededWith, selfOf, textOf } from './model-requests';
import { checkReplay, eventually, recordingTool, render, startTestSystem, uid } from './helpers';

const WINDOW = 1000;
const PER_MESSAGE = 100; // tokens the scripted model reports per message it was shown
const SUMMARY_PREFIX = '[Compacted conversation summary]\n';

let summaries = 0;

/** Compaction threads summarize what they see; children wait on a tool then report; roots obey their user. */
function script(req: ModelRequest): ScriptedReply {
  const usage = {
    inputTokens: PER_MESSAGE * req.messages.length,
    outputTokens: 0,
    totalTokens: PER_MESSAGE * req.messages.length,
  };
  const self = selfOf(req);
  const last = req.messages[req.messages.length - 1];
  if (seededWith(req, 'You are now INSIDE a compaction thread')) {
    const seen = req.messages.filter((m) => m.role === 'user').map(textOf);
    return {
      usage,
      toolCall: {
        name: 'close_thread',
        args: { thread_id: self, report_to_parent: `S${++summaries} covers ${seen.join(',')}` },
      },
    };
  }
  if (seededWith(req, 'You are now INSIDE the thread that you requested to create.')) {
    if (last?.role === 'tool_result' && last.name === 'child_wait')
      return { usage, toolCall: { name: 'report_to_parent', args: { report: `child got ${textOf(last)}` } } };
    if (last?.role === 'tool_result' && last.name === 'report_to_parent') return { usage, text: 'child idle' };
    return { usage, toolCall: { name: 'child_wait', args: {} } };
  }
  if (last?.role === 'user') {
    if (last.text === 'spawn')
      return {
        usage,
        toolCall: { name: 'spawn_thread', args: { instructions: 'wait, then report', child_of: [self] } },
      };
    if (last.text === 'subscribe') return { usage, toolCall: { name: 'watch', args: {} } };
    if (last.text === 'job') return { usage, toolCall: { name: 'job', args: {} } };
    return { usage, text: `ack ${last.text}` };
  }
  return { usage, text: `noted ${textOf(last).slice(0, 40)}` };
}

describe('compaction', () => {
  it('keeps a thread working past its context window three times, losing nothing', async () => {
    const model = new ScriptedModel(script, WINDOW);
    const waits: ToolContext[] = [];
    const watches: ToolContext[] = [];
    const jobs: ToolContext[] = [];
    const sys = await startTestSystem({
      model,
      tools: [recordingTool('child_wait', waits), recordingTool('watch', watches), recordingTool('job', jobs)],
    });
    try {
      const root = await sys.client.startThread({ threadId: uid('compact') });
      const rootRequests = () => model.requests.filter((r) => selfOf(r) === root.threadId);
      const lastRootRequest = () => rootRequests()[rootRequests().length - 1]!;
      const said: string[] = [];
      const say = async (text: string) => {
        said.push(text);
        await root.sendUserText(text);
        await root.waitForIdle();
      };
      const compactionsDone = (n: number) =>
        eventually(
          async () => {
            const s = await root.status();
            return s.compaction.completed >= n && s.compaction.running === undefined ? s : undefined;
          },
          30_000,
          `${n} compactions`,
        );

      // A subscription and a child, both started before any compaction.
      await say('subscribe');
      const watch = await eventually(() => watches[0]);
      await sys.client.deliver(subscriptionStart(watch, 'watching the repo'));
      await root.waitForIdle();
      await say('spawn');
      const wait = await eventually(() => waits[0]);
      const childId = wait.threadId;
      const childFirst = model.requests.find((r) => selfOf(r) === childId)!;

      // Drive the root past 75% of the window: the compaction starts by itself.
      let n = 0;
      while (
        (await root.status()).compaction.running === undefined &&
        (await root.status()).compaction.completed === 0
      ) {
        await say(`m${++n}`);
        expect(n).toBeLessThan(10);
      }
      await compactionsDone(1);
      // The parent heard it live: the summary of a compaction thread now stands in for its first items.
      const applied = sys.seen.filter((e) => e.threadId === root.threadId && e.type === 'compaction_applied');
      expect(applied).toHaveLength(1);
      const source = applied[0]!.type === 'compaction_applied' ? applied[0]!.sourceThreadId : '';
      expect((await sys.client.thread(source).status()).kind).toBe('compaction');
      await say('after one');
      const afterOne = lastRootRequest().messages;
      expect(afterOne[0]).toEqual({
        role: 'assistant',
        text: expect.stringMatching(/^\[Compacted conversation summary\]\nS\d+ covers subscribe,spawn,m1/),
      });
      expect(afterOne.slice(1).map(textOf)).toEqual(['after one']);

      // The child was spawned before the compaction: it still sees exactly what it inherited.
      await sys.client.deliver(toolResult(wait, 'the build'));
      await eventually(() => model.requests.filter((r) => selfOf(r) === childId).length >= 3 || undefined);
      const childLater = model.requests.filter((r) => selfOf(r) === childId)[1]!;
      expect(childLater.messages.slice(0, childFirst.messages.length)).toEqual(childFirst.messages);
      expect(childLater.messages.some((m) => textOf(m).startsWith(SUMMARY_PREFIX))).toBe(false);

      // Its report, and an event of the older subscription, still reach the root and name their original calls.
      await root.waitForIdle();
      await sys.client.deliver(subscriptionEvent(watch, 'push to main', { associative: true }));
      await root.waitForIdle();
      const injected = lastRootRequest().messages.filter(
        (m) => m.role === 'tool_call' && m.name === 'receive_event__injected',
      );
      expect(injected.map((m) => (m as { args: { original_tool_name: string } }).args.original_tool_name)).toEqual([
        'spawn_thread',
        'watch',
      ]);

      // Second compaction, automatic again; the compaction thread sees the first summary, then the tail.
      while ((await root.status()).compaction.completed < 2) {
        await say(`m${++n}`);
        if ((await root.status()).compaction.running) await compactionsDone(2);
        expect(n).toBeLessThan(30);
      }
      // (The child compacts too once its own context grows; only the root's compaction threads count here.)
      const rootCompactions = async () => {
        const children = new Set((await root.status()).children);
        return model.requests.filter(
          (r) => children.has(selfOf(r)) && seededWith(r, 'You are now INSIDE a compaction thread'),
        );
      };
      const secondCompaction = (await rootCompactions())[1]!;
      expect(textOf(secondCompaction.messages[0])).toMatch(/^\[Compacted conversation summary\]\nS\d+ covers/);
      expect(
        secondCompaction.messages.slice(-2).map((m) => (m.role === 'tool_call' ? m.name : textOf(m).slice(0, 40))),
      ).toEqual(['__harness_begin_compaction__', 'This tool call was synthetically injecte']);

      // Third compaction by hand while a tool call is pending: the call is not summarized, and its result still lands.
      await say('job');
      const job = await eventually(() => jobs[0]);
      await root.compact();
      const third = await compactionsDone(3);
      expect(third.pendingCall?.name).toBe('job');
      const thirdCompaction = (await rootCompactions())[2]!;
      expect(thirdCompaction.messages.some((m) => m.role === 'tool_call' && m.name === 'job')).toBe(false);
      await sys.client.deliver(toolResult(job, 'job done'));
      await root.waitForIdle();
      const afterThree = lastRootRequest().messages;
      expect(textOf(afterThree[0])).toMatch(/^\[Compacted conversation summary\]\nS\d+ covers/);
      expect(afterThree.slice(1).map((m) => (m.role === 'tool_call' ? `call ${m.name}` : textOf(m)))).toEqual([
        'call job',
        'job done',
      ]);
      await say('still here');
      expect(textOf(lastRootRequest().messages.at(-1))).toBe('still here');

      // The store keeps the whole conversation: every input exactly once, in order.
      const history = render(await root.history());
      expect(history.filter((l) => l.startsWith('user: '))).toEqual(said.map((t) => `user: ${t}`));
      const events = history.filter((l) => l.startsWith('event '));
      expect(events).toHaveLength(2);
      expect(events[0]).toMatch(/Report from child thread: .*child got the build/s);
      expect(events[1]).toMatch(/: push to main$/);
      const status = await root.status();
      expect(status.compaction).toEqual({ completed: 3 });
      expect(status.dropped).toEqual({});
      expect(status.usage?.totalTokens).toBeGreaterThan(0);
      await checkReplay(root, 'compaction-root');
      const compactionThread = sys.client.thread(selfOf(thirdCompaction));
      await eventually(async () => (await compactionThread.status()).status === 'closed' || undefined);
      await checkReplay(compactionThread, 'compaction-thread');
    } finally {
      await sys.shutdown();
    }
  });
});
