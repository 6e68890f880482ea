/**
 * Eager start (decision 72) on the real dev server: a client on its worker's `NativeConnection` starts a new thread
 * with the first user text in the start request, the server hands the first workflow task straight back, and the
 * conversation is the one a signal-with-start gives. Later texts, resends, closed threads, a hand-made start with a bad
 * input and continue-as-new each behave as without the option.
 */
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowClientInterceptor,
} from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { ThreadClosedError } from '../src/inbox/errors';
import { firstText } from '../src/model/projection';
import type { ModelRequest } from '../src/model/provider';
import { ScriptedModel } from '../src/model/scripted';
import { dropsQuery, THREAD_WORKFLOW_TYPE } from '../src/workflows/definitions';
import type { ThreadOptions } from '../src/workflows/contract';
import { checkReplay, render, startTestSystem, type TestSystem, uid } from './helpers';
import { eventTypeName } from '../bench/lib/history';

const model = new ScriptedModel((req: ModelRequest) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'tool_result') return { text: `Result: ${firstText(last.content)}` };
  return { text: `You said: ${last.role === 'user' ? last.text : ''}` };
});

let sys: TestSystem;
/** Per workflow id, each start request the eager clients sent: started eagerly, queued, or refused (it existed). */
const starts = new Map<string, ('eager' | 'queued' | 'exists')[]>();
const recordStarts: WorkflowClientInterceptor = {
  async startWithDetails(input, next) {
    const id = input.options.workflowId;
    const note = (s: 'eager' | 'queued' | 'exists') => starts.set(id, [...(starts.get(id) ?? []), s]);
    try {
      const out = await next(input);
      note(out.eagerlyStarted ? 'eager' : 'queued');
      return out;
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) note('exists');
      throw e;
    }
  },
};

function eagerClient(threadOptions?: ThreadOptions, signalNames?: 'by-kind'): AgentClient {
  return new AgentClient({
    client: new Client({ connection: sys.connection, interceptors: { workflow: [recordStarts] } }),
    taskQueue: sys.taskQueue,
    store: sys.store,
    eagerStart: true,
    ...(threadOptions && { threadOptions }),
    ...(signalNames && { signalNames }),
  });
}

/** The arguments the thread's current run was started with, decoded. */
async function startArgs(threadId: string): Promise<Record<string, unknown>> {
  const { events } = await sys.temporal.workflow.getHandle(threadId).fetchHistory();
  const started = events![0]!.workflowExecutionStartedEventAttributes!;
  return sys.temporal.options.loadedDataConverter.payloadConverter.fromPayload(started.input!.payloads![0]!);
}

async function eventTypes(threadId: string): Promise<string[]> {
  const { events } = await sys.temporal.workflow.getHandle(threadId).fetchHistory();
  return (events ?? []).map((e) => eventTypeName(e.eventType));
}

beforeAll(async () => {
  sys = await startTestSystem({ model });
});
afterAll(() => sys?.shutdown());

describe('eager start', () => {
  it("starts a new thread with its first text and no signal; the conversation is a signalled thread's", async () => {
    const client = eagerClient();
    const eager = uid('eager');
    const signalled = uid('signalled');
    await client.sendUserText(eager, 'Is build 42 green?', 'm1');
    await sys.client.sendUserText(signalled, 'Is build 42 green?', 'm1');
    expect(starts.get(eager)).toEqual(['eager']);
    await client.thread(eager).waitForIdle();
    await sys.client.thread(signalled).waitForIdle();
    const rendered = render(await client.thread(eager).history());
    expect(rendered).toEqual(render(await sys.client.thread(signalled).history()));
    expect(rendered).toEqual(['user: Is build 42 green?', 'assistant: You said: Is build 42 green?']);
    const types = await eventTypes(eager);
    expect(types).not.toContain('workflow_execution_signaled');
    expect(await eventTypes(signalled)).toContain('workflow_execution_signaled');

    // The next text goes by signal, with no second start request: the client knows the thread now.
    await client.sendUserText(eager, 'And build 43?', 'm2');
    await client.thread(eager).waitForIdle();
    expect(starts.get(eager)).toEqual(['eager']);
    expect((await eventTypes(eager)).filter((t) => t === 'workflow_execution_signaled')).toHaveLength(1);
    expect(render(await client.thread(eager).history()).slice(2)).toEqual([
      'user: And build 43?',
      'assistant: You said: And build 43?',
    ]);
    await checkReplay(client.thread(eager), 'eager-start');
  });

  it("by kind, the start carries the text's readable payload first, as the user_text signal would", async () => {
    const id = uid('by-kind');
    await eagerClient(undefined, 'by-kind').sendUserText(id, 'Is build 42 green?\nPlease check.', 'k1');
    expect(starts.get(id)).toEqual(['eager']);
    const args = await startArgs(id);
    expect(Object.keys(args).slice(0, 2)).toEqual(['firstInput', 'firstInputSignal']);
    expect(args.firstInputSignal).toBe('user_text');
    expect(JSON.stringify(args.firstInput)).toMatch(/^\{"text":"Is build 42 green\?\\nPlease check\."/);
    const thread = sys.client.thread(id);
    await thread.waitForIdle();
    expect(render(await thread.history())).toEqual([
      'user: Is build 42 green?\nPlease check.',
      'assistant: You said: Is build 42 green?\nPlease check.',
    ]);
  });

  it('startThread starts eagerly too, and the text after it goes by signal', async () => {
    const client = eagerClient();
    const thread = await client.startThread({ threadId: uid('started'), title: 'eager' });
    await client.startThread({ threadId: thread.threadId }); // idempotent: the running thread is returned
    await thread.sendUserText('hello');
    await thread.waitForIdle();
    expect(starts.get(thread.threadId)).toEqual(['eager', 'queued']);
    expect(render(await thread.history())).toEqual(['user: hello', 'assistant: You said: hello']);
    expect((await eventTypes(thread.threadId)).filter((t) => t === 'workflow_execution_signaled')).toHaveLength(1);
  });

  it('a resend of the first text from another client is a duplicate, dropped once', async () => {
    const id = uid('resend');
    await eagerClient().sendUserText(id, 'once', 'first');
    await sys.client.thread(id).waitForIdle();
    // A client that has not seen the thread tries a start, finds it running and signals the text.
    await eagerClient().sendUserText(id, 'once', 'first');
    expect(starts.get(id)).toEqual(['eager', 'exists']);
    const thread = sys.client.thread(id);
    await thread.waitForIdle();
    expect(render(await thread.history())).toEqual(['user: once', 'assistant: You said: once']);
    expect((await thread.status()).dropped).toEqual({ duplicate: 1 });
  });

  it('a closed thread refuses a text as without the option', async () => {
    const id = uid('closed');
    await eagerClient().sendUserText(id, 'hello');
    await sys.client.thread(id).waitForIdle();
    await sys.temporal.workflow.getHandle(id).terminate('closing it for the test');
    await expect(eagerClient().sendUserText(id, 'anyone there?')).rejects.toBeInstanceOf(ThreadClosedError);
    expect(starts.get(id)).toEqual(['eager', 'exists']);
  });

  it('a hand-made start with a bad first input drops it as malformed and the thread goes on', async () => {
    const id = uid('bad-start');
    await sys.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      workflowId: id,
      taskQueue: sys.taskQueue,
      args: [{ threadId: id, kind: 'root', firstInput: { threadId: 'someone-else', id: 'x', content: 'hi' } }],
    });
    const thread = sys.client.thread(id);
    await thread.waitForIdle();
    expect((await thread.status()).dropped).toEqual({ malformed: 1 });
    const drops = await sys.temporal.workflow.getHandle(id).query(dropsQuery);
    expect(drops.recent[0]!.what).toMatch(/^start input: /);
    const unnamed = uid('bad-signal');
    await sys.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      workflowId: unnamed,
      taskQueue: sys.taskQueue,
      args: [{ threadId: unnamed, kind: 'root', firstInput: { text: 'hi' }, firstInputSignal: 'shout' }],
    });
    await sys.client.thread(unnamed).waitForIdle();
    const refused = await sys.temporal.workflow.getHandle(unnamed).query(dropsQuery);
    expect(refused.recent[0]!.what).toBe("start input: no signal is named 'shout'");
    // A name that is no string, and would throw if turned into one, is refused the same way: no task fails.
    const hostile = uid('hostile-signal');
    await sys.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      workflowId: hostile,
      taskQueue: sys.taskQueue,
      args: [{ threadId: hostile, kind: 'root', firstInput: { text: 'hi' }, firstInputSignal: { toString: 1 } }],
    });
    await sys.client.thread(hostile).waitForIdle();
    const odd = await sys.temporal.workflow.getHandle(hostile).query(dropsQuery);
    expect(odd.recent[0]!.what).toBe('start input: no signal is named by a value of type object');
    expect(await eventTypes(hostile)).not.toContain('workflow_task_failed');
    await thread.sendUserText('still here?');
    await thread.waitForIdle();
    expect(render(await thread.history())).toEqual(['user: still here?', 'assistant: You said: still here?']);
  });

  it('a run continued as new does not take the first input again', async () => {
    const client = eagerClient({ maxRunEvents: 20 }, 'by-kind');
    const id = uid('can');
    await client.sendUserText(id, 'turn 0');
    for (let i = 1; i <= 4; i++) {
      await client.thread(id).waitForIdle();
      await client.sendUserText(id, `turn ${i}`);
    }
    const thread = client.thread(id);
    await thread.waitForIdle();
    const status = await thread.status();
    expect(status.runs).toBeGreaterThan(1);
    expect(status.dropped).toEqual({});
    const texts = render(await thread.history()).filter((l) => l.startsWith('user: '));
    expect(texts).toEqual(['user: turn 0', 'user: turn 1', 'user: turn 2', 'user: turn 3', 'user: turn 4']);
    const args = await startArgs(id);
    expect(args.firstInput).toBeUndefined();
    expect(args.firstInputSignal).toBeUndefined();
  });

  it('refuses eagerStart on a client that does not share a worker connection', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      expect(() => new AgentClient({ client, taskQueue: sys.taskQueue, eagerStart: true })).toThrow(
        /eagerStart needs a Temporal client on a worker's NativeConnection/,
      );
    } finally {
      await connection.close();
    }
  });
});
