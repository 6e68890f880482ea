/**
 * Release 0.2's rules for a slice that fails on every attempt, against the real dev server. A poison input — here one
 * the model hangs on, attempt after attempt, until the slice's timeout — is set aside: the thread records it in
 * `status().setAside`, shows `failed` (status, `AgentStatus`, the UI's current details, `threads --status failed`),
 * answers a tool call whose result was set aside with an error result, and goes on with the next input. A failure that
 * says nothing about the inputs (a lost store) blocks instead: the thread retries once per new input, never in a loop,
 * and resumes with its exact history after a restore. Raw `temporal workflow signal` inputs over the shape limits are
 * dropped in the workflow's signal handler.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sliceIdFor } from '../../src/core/ids';
import { setAsideResult } from '../../src/core/texts';
import { inputLimitViolation } from '../../src/core/validate';
import type { InputMessage, ThreadEvent, ThreadStatus } from '../../src/core/types';
import { findTemporalCli } from '../../src/devserver/cli';
import { firstText } from '../../src/model/projection';
import type { ModelMessage, ModelRequest, ModelStreamPart } from '../../src/model/provider';
import { ScriptedModel } from '../../src/model/scripted';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { toolResult } from '../../src/tools/messages';
import type { ToolContext } from '../../src/tools/tool';
import { type AgentWorker, createAgentWorker } from '../../src/worker/create-worker';
import { cliRunner, jsonLines } from '../cli-process';
import {
  eventually,
  FAST_POLICY,
  recordingTool,
  lostStoreSetup,
  render,
  startTestSystem,
  type TestSystem,
  uid,
} from '../helpers';
import { localActivityType } from '../fixtures/flood';

const mentionsPoison = (m: ModelMessage) =>
  (m.role === 'user' && m.text.includes('poison')) ||
  (m.role === 'tool_result' && firstText(m.content).includes('poison'));

/**
 * The scripted model of the other tests, except that it hangs on any request that shows it the word `poison` — a user
 * text or a tool result — until the slice is cancelled (its abort signal is honoured). It never answers such a
 * request, so a turn that shows `poison` can only reach history without an answer of the model.
 */
class PoisonModel extends ScriptedModel {
  /** Hung requests per thread, and how many of them were aborted. */
  readonly hangs = new Map<string, number>();
  readonly aborted = new Map<string, number>();

  override async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    if (request.messages.some(mentionsPoison)) {
      const t = request.threadId;
      this.hangs.set(t, (this.hangs.get(t) ?? 0) + 1);
      await new Promise<never>((_, reject) => {
        const abort = () => {
          this.aborted.set(t, (this.aborted.get(t) ?? 0) + 1);
          reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
        };
        if (signal.aborted) abort();
        else signal.addEventListener('abort', abort, { once: true });
      });
    }
    yield* super.stream(request, signal);
  }
}

const lastUser = (req: ModelRequest) => [...req.messages].reverse().find((m) => m.role === 'user')?.text ?? '';

/** Answers `ok: <last user text>`, `got: <result>` after a tool result, and calls `wait_for` on `wait for it`. */
const script = (req: ModelRequest) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'tool_result') return { text: `got: ${firstText(last.content)}` };
  return lastUser(req) === 'wait for it'
    ? { toolCall: { name: 'wait_for', args: {} } }
    : { text: `ok: ${lastUser(req)}` };
};

/** `depth` objects nested in one another, as JSON text (the input-limits test's shape). */
const nestJson = (depth: number) => `${'{"d":'.repeat(depth - 1)}{"leaf":true}${'}'.repeat(depth - 1)}`;

const run = (cmd: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

interface WorkflowHistory {
  events?:
    | {
        markerRecordedEventAttributes?: { markerName?: string | null } | null;
        activityTaskStartedEventAttributes?: { attempt?: number | null } | null;
      }[]
    | null;
}

/**
 * What the thread's Temporal history recorded of its slices (release 0.3): `local`, the local activities (each a
 * slice's first attempt, ended within its budget or handed off); `activities`, the attempt each regular activity
 * ended on (a handed-off slice's adopting activity, then the fallback for attempts 2…N).
 */
async function sliceRuns(thread: {
  workflow: { fetchHistory(): Promise<unknown> };
}): Promise<{ local: number; activities: number[] }> {
  const events = ((await thread.workflow.fetchHistory()) as WorkflowHistory).events ?? [];
  return {
    // Slices only: a local slice of several inputs is preceded by its peek, another local activity (decision 67).
    local: events.filter((e) => localActivityType(e as Parameters<typeof localActivityType>[0]) === 'runSliceLocal')
      .length,
    activities: events.flatMap((e) =>
      e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 0] : [],
    ),
  };
}

const currentDetails = async (thread: { workflow: { query(name: string): Promise<unknown> } }) =>
  ((await thread.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ?? '';

const listed = async (sys: TestSystem, status: ThreadStatus['status']) => {
  const ids: string[] = [];
  for await (const t of sys.client.listThreads({ status })) ids.push(t.threadId);
  return ids;
};

/** The failure Temporal reports for a slice whose every attempt ran out of `sliceTimeoutMs`. */
const TIMEOUT = 'activity StartToClose timeout';

describe('a slice that hangs on every attempt sets its batch aside', () => {
  const model = new PoisonModel(script);
  const calls: ToolContext[] = [];
  let sys: TestSystem;
  const cli = cliRunner(
    () => ['--address', inject('temporalAddress'), '--task-queue', sys.taskQueue, '--store', sys.storePath],
    {
      INFINITY_EVENTS_URL: '',
    },
  );

  beforeAll(async () => {
    sys = await startTestSystem({
      model,
      tools: [recordingTool('wait_for', calls)],
      // Two attempts of 3 s each; the model's own stream watchdog is kept out of the way, so only the slice's timeout
      // ends a hung attempt.
      threadOptions: { sliceMaxAttempts: 2, sliceTimeoutMs: 3_000, sliceHeartbeatTimeoutMs: 2_000 },
      completionPolicy: { initiateTimeoutMs: 120_000, chunkTimeoutMs: 120_000 },
    });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('poison user text: set aside with the timeout, failed everywhere until the next text is answered; live info per attempt', async () => {
    const thread = await sys.client.startThread({ threadId: uid('poison-text') });
    await thread.sendUserText('hello');
    expect((await thread.waitForIdle()).status).toBe('idle');

    // Live events through thread.events(), until the second attempt's failure is told.
    const live: ThreadEvent[] = [];
    const watching = (async () => {
      for await (const e of thread.events()) {
        live.push(e);
        if (e.type === 'info' && e.text.includes('failed (attempt 2)')) break;
      }
    })();
    const started = Date.now();
    const poisonId = await thread.sendUserText('poison pill');
    const failed = await thread.waitForIdle();
    const elapsed = Date.now() - started;

    const sliceId = sliceIdFor(thread.threadId, 1);
    expect(failed).toMatchObject({ status: 'failed', lastError: TIMEOUT, historyLength: 2, queued: 0 });
    expect(failed.setAside).toEqual([{ sliceId, reason: TIMEOUT, messageIds: [poisonId], answeredWithError: [] }]);
    // The set-aside slice's id is used up: nothing of it was committed, and the next slice must not answer for it.
    expect(failed.slices).toBe(2);
    // Two attempts of 3 s (and Temporal's 1 s backoff): not one, not ten.
    expect(elapsed).toBeGreaterThan(6_000);
    expect(await eventually(() => model.aborted.get(thread.threadId) === 2, 15_000, 'both hung attempts aborted')).toBe(
      true,
    );
    expect(model.hangs.get(thread.threadId)).toBe(2);
    // 'hello' ended within its local budget; the poison's first attempt began locally, was handed off and adopted
    // (timed out), and its second ran as the fallback activity.
    expect(await sliceRuns(thread)).toEqual({ local: 2, activities: [1, 1] });
    // Nothing of the poison reached the store.
    expect(render(await thread.history())).toEqual(['user: hello', 'assistant: ok: hello']);

    // The UI's current details, the AgentStatus search attribute (visibility lags) and the project CLI agree.
    const details = await currentDetails(thread);
    expect(details).toMatch(/^\*\*failed\*\* · 2 items · 2 slices/);
    expect(details).toContain(`last error: ${TIMEOUT}`);
    expect(details).toContain(`set aside 1 inputs of ${sliceId}: ${TIMEOUT}`);
    await eventually(
      async () => (await listed(sys, 'failed')).includes(thread.threadId),
      30_000,
      'AgentStatus = failed',
    );
    expect(await listed(sys, 'idle')).not.toContain(thread.threadId);
    const threads = await cli.run('threads', '--status', 'failed', '--json');
    expect(threads).toMatchObject({ code: 0, stderr: '' });
    expect(jsonLines<{ threadId: string; status: string }>(threads.stdout)).toContainEqual(
      expect.objectContaining({ threadId: thread.threadId, status: 'failed', kind: 'root', running: true }),
    );
    const plain = await cli.run('threads', '--status', 'failed');
    // Its agent's column: `default` (the dev server has `AgentName`).
    expect(plain.stdout.split('\n')).toContain(`${thread.threadId}\troot\tfailed\tdefault`);

    // One live info event per failed attempt, naming the slice, on the hub and through thread.events().
    const told = (events: ThreadEvent[]) =>
      events.flatMap((e) =>
        e.threadId === thread.threadId && e.type === 'info' && e.text.includes(`slice ${sliceId} failed`)
          ? [e.text]
          : [],
      );
    await eventually(() => told(sys.seen).length >= 2, 15_000, 'an info event per failed attempt');
    expect(told(sys.seen)).toHaveLength(2);
    expect(told(sys.seen)[0]).toMatch(new RegExp(`^Error: slice ${sliceId} failed \\(attempt 1\\): `));
    expect(told(sys.seen)[1]).toMatch(new RegExp(`^Error: slice ${sliceId} failed \\(attempt 2\\): `));
    await watching;
    expect(told(live)).toEqual(told(sys.seen));

    // The thread goes on: the next text is answered, the model never sees the poison, and the status clears.
    await thread.sendUserText('after');
    const after = await thread.waitForIdle();
    expect(after).toMatchObject({ status: 'idle', historyLength: 4, slices: 3 });
    expect(after.lastError).toBeUndefined();
    expect(after.setAside).toEqual(failed.setAside); // the record is kept
    expect(render(await thread.history())).toEqual([
      'user: hello',
      'assistant: ok: hello',
      'user: after',
      'assistant: ok: after',
    ]);
    expect(model.hangs.get(thread.threadId)).toBe(2);
    expect(await currentDetails(thread)).toMatch(/^\*\*idle\*\* · 4 items · 3 slices/);
    await eventually(
      async () => (await listed(sys, 'idle')).includes(thread.threadId),
      30_000,
      'AgentStatus = idle again',
    );
    expect(await listed(sys, 'failed')).not.toContain(thread.threadId);
    const none = await cli.run('threads', '--status', 'failed');
    expect(none.stdout).not.toContain(thread.threadId);
  });

  it('poison tool result: the call is answered with the set-aside error, the model is invoked on it, the thread goes on', async () => {
    const thread = await sys.client.startThread({ threadId: uid('poison-result') });
    await thread.sendUserText('wait for it');
    const waiting = await thread.waitForIdle();
    expect(waiting).toMatchObject({ status: 'waiting_tool', historyLength: 2, slices: 1 });
    const ctx = calls.find((c) => c.threadId === thread.threadId)!;
    const result = toolResult(ctx, 'poison result');
    await ctx.send(result);

    // The failure lasts only until the slice that commits the error result succeeds, right after it.
    const s = await thread.waitForIdle();
    const sliceId = sliceIdFor(thread.threadId, 1);
    expect(s).toMatchObject({ status: 'idle', pendingCall: null, historyLength: 4, slices: 3 });
    expect(s.lastError).toBeUndefined();
    expect(s.setAside).toEqual([
      { sliceId, reason: TIMEOUT, messageIds: [result.id], answeredWithError: [ctx.toolCallId] },
    ]);
    expect(model.hangs.get(thread.threadId)).toBe(2);
    const error = setAsideResult(TIMEOUT);
    expect(error).toBe(`Error: the result of this tool call could not be processed and was set aside (${TIMEOUT})`);
    expect(render(await thread.history())).toEqual([
      'user: wait for it',
      'call #1 wait_for {}',
      `result #1: ${error}`,
      `assistant: got: ${error}`,
    ]);
    // The model was invoked again on the error result, not on the poison.
    const last = model.requests.filter((r) => r.threadId === thread.threadId).at(-1)!;
    expect(last.messages.at(-1)).toEqual({
      role: 'tool_result',
      id: ctx.toolCallId,
      name: 'wait_for',
      content: [{ type: 'text', text: error }],
    });
    expect(last.messages.some(mentionsPoison)).toBe(false);
    // The call is answered for good: a late result for it is dropped, and the thread still answers.
    await ctx.send(toolResult(ctx, 'a late result', { id: randomUUID() }));
    await thread.sendUserText('still there?');
    const after = await thread.waitForIdle();
    expect(after.dropped).toEqual({ already_processed: 1 });
    expect(render(await thread.history()).slice(4)).toEqual(['user: still there?', 'assistant: ok: still there?']);
    // Three slices ended within their local budget; the poison's was handed off, adopted, and retried once.
    expect(await sliceRuns(thread)).toEqual({ local: 4, activities: [1, 1] });
  });

  it('a tool result that arrives in one batch with a poison text: both set aside, the call answered with the error', async () => {
    // Its own worker, stopped while the two inputs arrive, so that the next one takes them in one workflow activation.
    // Slices are regular activities here: a local slice takes the queue's first input only (decision 50), and this
    // is about a batch of two, as any slice after the first of a workflow task takes under load.
    const own = await startTestSystem({
      model,
      tools: [recordingTool('wait_for', calls)],
      threadOptions: {
        sliceMaxAttempts: 2,
        sliceTimeoutMs: 3_000,
        sliceHeartbeatTimeoutMs: 2_000,
        localSliceBudgetMs: 0,
      },
      completionPolicy: { initiateTimeoutMs: 120_000, chunkTimeoutMs: 120_000 },
    });
    let next: AgentWorker | undefined;
    try {
      const thread = await own.client.startThread({ threadId: uid('poison-batch') });
      await thread.sendUserText('wait for it');
      expect(await thread.waitForIdle()).toMatchObject({ status: 'waiting_tool', historyLength: 2 });
      const ctx = calls.find((c) => c.threadId === thread.threadId)!;
      await own.worker!.shutdown();

      const result = toolResult(ctx, 'a clean result');
      await thread.deliver(result);
      const poisonId = await thread.sendUserText('poison after the result');
      next = await createAgentWorker({
        connection: own.connection,
        taskQueue: own.taskQueue,
        store: own.store,
        model,
        tools: [recordingTool('wait_for', calls)],
        onEvent: (e) => own.events.emit(e),
        completionPolicy: { ...FAST_POLICY, initiateTimeoutMs: 120_000, chunkTimeoutMs: 120_000 },
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      void next.run();

      const s = await thread.waitForIdle();
      const error = setAsideResult(TIMEOUT);
      expect(s).toMatchObject({ status: 'idle', pendingCall: null, historyLength: 4, slices: 3 });
      expect(s.lastError).toBeUndefined();
      expect(s.setAside).toEqual([
        {
          sliceId: sliceIdFor(thread.threadId, 1),
          reason: TIMEOUT,
          messageIds: [result.id, poisonId],
          answeredWithError: [ctx.toolCallId],
        },
      ]);
      expect(model.hangs.get(thread.threadId)).toBe(2);
      // The clean result went with the poison (the batch is one unit); the call still has its answer, and the model its turn.
      expect(render(await thread.history())).toEqual([
        'user: wait for it',
        'call #1 wait_for {}',
        `result #1: ${error}`,
        `assistant: got: ${error}`,
      ]);
    } finally {
      await next?.shutdown();
      await own.connection.close();
      await own.store.close();
    }
  });

  describe('raw inputs past the client', () => {
    const temporalCli = findTemporalCli({ install: false });
    const signal = async (threadId: string, json: string) => {
      const file = join(inject('scratchDir'), `signal-${randomUUID()}.json`);
      writeFileSync(file, json);
      return run(temporalCli, [
        'workflow',
        'signal',
        '--workflow-id',
        threadId,
        '--name',
        'input',
        '--input-file',
        file,
        '--address',
        inject('temporalAddress'),
      ]);
    };
    /** An input nested `depth` levels deep in all (the input is level 1, as `inputLimitViolation` counts). */
    const input = (threadId: string, text: string, depth: number) =>
      `{"id":"${randomUUID()}","threadId":"${threadId}","content":{"type":"text","text":"${text}"},"metadata":${nestJson(depth - 1)}}`;

    it('temporal workflow signal: 100 levels committed; 5,000 and 10,000 dropped as malformed; the thread answers', async () => {
      const thread = await sys.client.startThread({ threadId: uid('raw-signal') });
      await thread.sendUserText('hello');
      const before = await thread.waitForIdle();

      const ok = await signal(thread.threadId, input(thread.threadId, 'deep 100', 100));
      expect(ok).toMatchObject({ code: 0 });
      const accepted = await thread.waitForIdle();
      expect(accepted).toMatchObject({ status: 'idle', historyLength: 4 });
      expect(accepted.dropped).toEqual(before.dropped);
      expect(render(await thread.history()).slice(2)).toEqual(['user: deep 100', 'assistant: ok: deep 100']);

      // The workflow counts depth as the client does: 100 is within the limit of 128, 5,000 and 10,000 are not. (10,000
      // is also as deep as the Temporal CLI's JSON parser takes: it refuses deeper input as "not valid JSON".)
      expect(inputLimitViolation(JSON.parse(input(thread.threadId, 'x', 100)))).toBeUndefined();
      for (const depth of [5_000, 10_000]) {
        const json = input(thread.threadId, `deep ${depth}`, depth);
        expect(inputLimitViolation(JSON.parse(json))).toMatch(/is nested more than 128 levels deep$/);
        const r = await signal(thread.threadId, json);
        expect(r, r.stderr).toMatchObject({ code: 0 });
      }
      await thread.sendUserText('after the deep ones');
      const after = await thread.waitForIdle();
      expect(after.dropped.malformed).toBe((before.dropped.malformed ?? 0) + 2);
      expect(after).toMatchObject({ status: 'idle', historyLength: 6 });
      expect(after.lastError).toBeUndefined();
      expect(render(await thread.history()).slice(4)).toEqual([
        'user: after the deep ones',
        'assistant: ok: after the deep ones',
      ]);
      // Both deep signals are in Temporal's history (the server took them); the workflow dropped them.
      const history = (await thread.workflow.fetchHistory()) as {
        events?: { workflowExecutionSignaledEventAttributes?: unknown }[];
      };
      expect((history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(5);
    });

    it('infinity-temporal deliver --message: 100 levels of metadata are delivered and committed', async () => {
      // (5,000 and 10,000 through the project CLI exit 2: test/input-limits.test.ts.)
      const thread = await sys.client.startThread({ threadId: uid('cli-deep-100') });
      await thread.sendUserText('hello');
      await thread.waitForIdle();
      const file = join(inject('scratchDir'), `deep-100-${randomUUID()}.json`);
      const message: Omit<InputMessage, 'threadId' | 'metadata'> = {
        id: randomUUID(),
        content: { type: 'text', text: 'deep 100 by cli' },
      };
      writeFileSync(file, `${JSON.stringify(message).slice(0, -1)},"metadata":${nestJson(99)}}`);
      const r = await cli.run('deliver', thread.threadId, '--message', file);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^(accepted|delivered) ${message.id}\\n$`));
      const s = await thread.waitForIdle();
      expect(s.dropped.malformed).toBeUndefined();
      expect(render(await thread.history()).slice(2)).toEqual([
        'user: deep 100 by cli',
        'assistant: ok: deep 100 by cli',
      ]);
    });
  });
});

describe('a slice that fails for a lost store blocks, without spinning', () => {
  const lostStore = lostStoreSetup('blocked');
  let sys: TestSystem | undefined;

  it('retries once per new input while blocked, shows failed, and resumes with exact history after a restore', async () => {
    const model = lostStore.echoModel();
    sys = await lostStore.start(model);
    const thread = await sys.client.startThread({ threadId: uid('blocked') });
    await thread.sendUserText('one');
    await thread.waitForIdle();
    const backup = `${sys.storePath}.bak`;
    await (sys.store as SqliteConversationStore).backup(backup);
    const calls = model.requests.length;

    rmSync(sys.storePath);
    await thread.sendUserText('two');
    const blocked = await thread.waitForIdle();
    const lost = `conversation store ${sys.storePath} was removed`;
    expect(blocked).toMatchObject({ status: 'failed', historyLength: 2, slices: 1, queued: 0 });
    expect(blocked.lastError).toContain(lost);
    expect(blocked.setAside).toBeUndefined(); // blocked, not set aside: the inputs are kept
    const sliceId = sliceIdFor(thread.threadId, 1);
    expect(
      sys.seen
        .filter((e) => e.threadId === thread.threadId && e.type === 'info')
        .map((e) => (e as { text: string }).text),
    ).toEqual([
      expect.stringMatching(
        new RegExp(`^Error: slice ${sliceId} failed \\(attempt 1\\): ${lost.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`),
      ),
    ]);
    await eventually(
      async () => (await listed(sys!, 'failed')).includes(thread.threadId),
      30_000,
      'AgentStatus = failed',
    );
    expect(await currentDetails(thread)).toMatch(/^\*\*failed\*\* · 2 items · 1 slices/);
    // One attempt each, both local: a lost store is no failure another attempt can mend.
    const first = await sliceRuns(thread);
    expect(first).toEqual({ local: 2, activities: [] });

    // Three more inputs: one retry of the blocked slice each, and nothing between them. (Polled: a blocked thread with
    // queued inputs is not idle, so waitForIdle would wait for good.)
    const told = () => sys!.seen.filter((e) => e.threadId === thread.threadId && e.type === 'info').length;
    for (const [i, text] of ['three', 'four', 'five'].entries()) {
      await thread.sendUserText(text);
      await eventually(
        async () => (await sliceRuns(thread)).local === first.local + i + 1,
        30_000,
        `the retry for '${text}'`,
      );
      const s = await eventually(
        async () => {
          const now = await thread.status();
          return now.status === 'failed' && now.queued === i + 1 ? now : undefined;
        },
        30_000,
        `blocked again after '${text}'`,
      );
      expect(s).toMatchObject({ historyLength: 2, slices: 1 });
      expect(s.lastError).toContain(lost);
      expect(told()).toBe(i + 2); // the retry's failure was told live too
    }
    await new Promise((r) => setTimeout(r, 3_000));
    const later = await sliceRuns(thread);
    expect(later).toEqual({ local: first.local + 3, activities: [] });
    expect(await thread.status()).toMatchObject({ status: 'failed', queued: 3, historyLength: 2, slices: 1 });
    expect(model.requests.length).toBe(calls); // the model was never called for a slice that could not commit

    // The README's restore: stop the worker, drop the stale WAL companions, put the backup in place, start again.
    const { store } = await lostStore.restore(backup, model);

    await thread.sendUserText('six');
    const resumed = await thread.waitForIdle();
    expect(resumed).toMatchObject({ status: 'idle', queued: 0 });
    expect(resumed.lastError).toBeUndefined();
    const items = render((await store.load(thread.threadId)).map((s) => s.item));
    // The blocked slice ran again under its own id first, then what waited behind it, in order.
    expect(items).toEqual([
      'user: one',
      'assistant: ok: one',
      'user: two',
      'assistant: ok: two',
      'user: three',
      'user: four',
      'user: five',
      'user: six',
      'assistant: ok: six',
    ]);
    expect(resumed).toMatchObject({ historyLength: items.length, slices: 3 });
    await eventually(
      async () => (await listed(sys!, 'idle')).includes(thread.threadId),
      30_000,
      'AgentStatus = idle again',
    );
  });
});
