/**
 * Many threads at once, and a worker whose cache holds fewer threads than are alive: evicted threads replay from
 * Temporal's history and resume with their exact conversation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstText } from '../src/model/projection';
import { ScriptedModel } from '../src/model/scripted';
import { toolResult } from '../src/tools/messages';
import { defineTool, type ToolContext } from '../src/tools/tool';
import { checkReplay, eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';

const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user')
    return { text: `on it: ${last.text}`, toolCall: { name: 'lookup', args: { q: last.text } } };
  if (last.role === 'tool_result') return { text: `found ${firstText(last.content)}` };
  return { text: 'ok' };
});

describe('100 concurrent threads', () => {
  let sys: TestSystem;
  const echo = defineTool<{ q: string }>({
    name: 'lookup',
    description: 'answers after a short delay',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execute(args, ctx) {
      setTimeout(() => void ctx.send(toolResult(ctx, `<${args.q}>`)), 50);
    },
  });
  beforeAll(async () => {
    sys = await startTestSystem({ model, tools: [echo] });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('runs all of them to completion with their own histories', async () => {
    const run = uid('many');
    const ids = Array.from({ length: 100 }, (_, i) => `${run}-${i}`);
    const threads = await Promise.all(ids.map((threadId) => sys.client.startThread({ threadId })));
    await Promise.all(threads.map((t, i) => t.sendUserText(`question ${i}`)));
    const statuses = await Promise.all(threads.map((t) => t.waitForIdle({ settled: true, timeoutMs: 120_000 })));
    expect(statuses.every((s) => s.status === 'idle' && s.slices === 2)).toBe(true);
    for (const [i, t] of threads.entries()) {
      expect(render(await t.history())).toEqual([
        `user: question ${i}`,
        `assistant: on it: question ${i}`,
        `call #1 lookup {"q":"question ${i}"}`,
        `result #1: <question ${i}>`,
        `assistant: found <question ${i}>`,
      ]);
    }
  });
});

describe('bounded worker cache', () => {
  let sys: TestSystem;
  const pending: ToolContext[] = [];
  const hold = recordingTool('lookup', pending);
  beforeAll(async () => {
    sys = await startTestSystem({ model, tools: [hold], maxCachedWorkflows: 2 });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('evicts idle threads and resumes them correctly', async () => {
    const run = uid('evict');
    const threads = await Promise.all(
      Array.from({ length: 8 }, (_, i) => sys.client.startThread({ threadId: `${run}-${i}` })),
    );
    for (const [i, t] of threads.entries()) {
      await t.sendUserText(`q${i}`);
      await t.waitForIdle();
    }
    const calls = () => pending.filter((c) => c.threadId.startsWith(run));
    await eventually(() => new Set(calls().map((c) => c.threadId)).size === 8, 30_000, 'all calls');
    // Eight threads wait on tools while the cache holds two: most of them were evicted.
    const cached = sys.worker!.worker.getStatus().numCachedWorkflows;
    expect(cached).toBeLessThanOrEqual(2);
    // A slice retried after its commit (a local slice whose task was evicted under load) dispatches its committed call
    // again, under the same call id (docs/semantics.md §3: tools are idempotent per call id): one call per thread.
    const byThread = new Map<string, ToolContext>();
    for (const ctx of calls()) {
      expect(ctx.toolCallId).toBe((byThread.get(ctx.threadId) ?? ctx).toolCallId);
      byThread.set(ctx.threadId, ctx);
    }
    for (const ctx of byThread.values())
      await sys.client.deliver(toolResult(ctx, `a-${ctx.threadId.split('-').at(-1)}`));
    for (const [i, t] of threads.entries()) {
      await t.waitForIdle({ settled: true });
      expect(render(await t.history())).toEqual([
        `user: q${i}`,
        `assistant: on it: q${i}`,
        `call #1 lookup {"q":"q${i}"}`,
        `result #1: a-${i}`,
        `assistant: found a-${i}`,
      ]);
    }
    expect(sys.worker!.worker.getStatus().numCachedWorkflows).toBeLessThanOrEqual(2);
    await checkReplay(threads[0]!, 'evicted-and-resumed');
  });
});
