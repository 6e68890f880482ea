/**
 * Issue 38 §2 on a real server: a thread flooded with the largest ids a raw signal may carry keeps continuing as new
 * within its payload bound, prompts of a pending call are bounded, and `status` and `waitForIdle` keep answering; no
 * workflow task fails. The client refuses an id past its entry bound. (The field-by-field generator is
 * test/unit/state-bounds.test.ts.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ToolContext } from '../src/tools/tool';
import { AgentClient } from '../src/client/agent-client';
import { CARRIED_MAX_BYTES, MAX_ID_CHARS, PROMPTS_PER_CALL } from '../src/core/state-bounds';
import { InvalidInputError } from '../src/inbox/errors';
import { ScriptedModel } from '../src/model/scripted';
import { eventually, recordingTool, startTestSystem, type TestSystem, uid } from './helpers';

const waits: ToolContext[] = [];
let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({
    model: new ScriptedModel((r) =>
      JSON.stringify(r.messages.at(-1)).includes('please wait')
        ? { toolCall: { name: 'wait_here', args: {} } }
        : { text: 'ok' },
    ),
    tools: [recordingTool('wait_here', waits)],
  });
});
afterAll(() => sys?.shutdown());

async function failedTasks(id: string): Promise<number> {
  const { events } = await sys.temporal.workflow.getHandle(id).fetchHistory();
  return (events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
}

it('70 raw signals with 60 KB ids, then a send: the thread continues as new within its bound and answers', async () => {
  const client = new AgentClient({
    client: sys.temporal,
    taskQueue: sys.taskQueue,
    store: sys.store,
    threadOptions: { maxRunEvents: 40 },
  });
  const id = uid('long-ids');
  await client.sendUserText(id, 'hello');
  await client.thread(id).waitForIdle({ timeoutMs: 30_000 });
  const handle = sys.temporal.workflow.getHandle(id);
  for (let i = 0; i < 70; i++) {
    await handle.signal('input', {
      id: `${i}-${'k'.repeat(60_000)}`,
      threadId: id,
      content: { type: 'text', text: `text ${i}` },
    });
  }
  await client.sendUserText(id, 'last one');
  const st = await client.thread(id).waitForIdle({ timeoutMs: 60_000 });
  expect(st.runs).toBeGreaterThan(1);
  expect(st.queued).toBe(0);
  expect(st.oversizedState).toBeUndefined();
  // The current run's start input (what the previous run carried) fits the bound.
  const { events } = await handle.fetchHistory();
  const started = events![0]!.workflowExecutionStartedEventAttributes!;
  expect(started.continuedExecutionRunId).toBeTruthy();
  const payload = started.input!.payloads![0]!.data!;
  expect(payload.length).toBeLessThanOrEqual(CARRIED_MAX_BYTES);
  expect(await failedTasks(id)).toBe(0);
});

it('prompts of a pending call: an oversized one is dropped, the rest keep the newest; status and waitForIdle answer', async () => {
  const id = uid('prompts');
  await sys.client.sendUserText(id, 'please wait');
  const call = await eventually(() => waits.find((w) => w.threadId === id), 30_000, 'the call');
  const handle = sys.temporal.workflow.getHandle(id);
  const choice = (n: number, size: number) => ({
    id: `p-${n}`,
    threadId: id,
    content: { type: 'text', text: '' },
    synthetic: {
      type: 'prompt',
      toolCallId: call.toolCallId,
      prompt: {
        kind: 'user_choice',
        id: `choice-${n}`,
        prompt: 'q'.repeat(size),
        choices: ['yes', 'no'],
        default: 0,
        responseUrl: 'http://127.0.0.1:9/answer',
      },
    },
  });
  // As in the review: 20 prompts of ~120 KB each.
  for (let n = 0; n < 20; n++) await handle.signal('input', choice(n, 120_000));
  // And 30 small ones with distinct choice ids.
  for (let n = 100; n < 130; n++) await handle.signal('input', choice(n, 100));
  const st = await eventually(
    async () => {
      const s = await sys.client.thread(id).status();
      return s.queued === 0 && (s.dropped.malformed ?? 0) >= 20 ? s : undefined;
    },
    30_000,
    'the prompts taken',
  );
  expect(st.dropped.malformed).toBe(20);
  expect(st.prompts).toHaveLength(PROMPTS_PER_CALL);
  expect(st.prompts.at(-1)).toMatchObject({ id: 'choice-129' });
  const waited = await sys.client.thread(id).waitForIdle({ timeoutMs: 30_000 });
  expect(waited.status).toBe('waiting_tool');
  expect(await failedTasks(id)).toBe(0);
});

it('the client refuses an id past the entry bound before anything is sent', async () => {
  const id = uid('client-id');
  await expect(sys.client.sendUserText(id, 'hi', 'a'.repeat(MAX_ID_CHARS + 1))).rejects.toBeInstanceOf(
    InvalidInputError,
  );
  await expect(sys.temporal.workflow.getHandle(id).describe()).rejects.toThrow();
  await sys.client.sendUserText(id, 'hi', 'a'.repeat(MAX_ID_CHARS));
  expect((await sys.client.thread(id).waitForIdle({ timeoutMs: 30_000 })).historyLength).toBe(2);
});
