/**
 * No malformed input wedges a thread (security review, item 1; issue 26), on the real dev server. The reported case: a
 * `prompt` control input whose `choices` is a string passed the checks, and the current details called `join` on it
 * in every workflow task, which then failed for good (and `temporal workflow reset` re-applied it). Then thousands of
 * generated hostile payloads (test/fixtures/hostile-inputs.ts; seeded, the seed is printed) on every signal name and
 * the acknowledged `deliver` update, sent raw through the Temporal client as the `temporal` CLI would: no workflow task
 * fails, the thread still answers, every input that was taken reached history exactly once, and every drop is counted.
 */
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isUserText, inputLimitViolation, validateInputMessage, validateKindSignal } from '../src/core/validate';
import type { DeliveryAck, DroppedInputs, InputMessage } from '../src/core/types';
import { ScriptedModel } from '../src/model/scripted';
import type { ToolContext } from '../src/tools/tool';
import { treeScript } from './fixtures/tree-script';
import { choicePrompt, generate, rng, SIGNAL_NAMES, type SignalName } from './fixtures/hostile-inputs';
import {
  eventually,
  moveThroughBridge,
  recordingTool,
  releaseBundle,
  render,
  replacementWorker,
  startTestSystem,
  type TestSystem,
  uid,
} from './helpers';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const SEED = Number(process.env.HOSTILE_SEED ?? Date.now() % 2 ** 31);
/** Payloads per signal name, and by the `deliver` update. */
const PER_SIGNAL = 350;
const PER_UPDATE = 300;
/** Sent at once: the server takes them concurrently, the thread in whatever order they land. */
const CHUNK = 50;
/** Updates in flight at once: the server refuses more than 10 per workflow (`history.maxInFlightUpdates`). */
const UPDATES_AT_ONCE = 8;

let sys: TestSystem;
const calls: ToolContext[] = [];

beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [recordingTool('wait_here', calls)] });
});
afterAll(async () => {
  await sys?.shutdown();
});

/** Every event of every run of a thread, from `firstRunId` along its continue-as-new chain. */
async function allRuns(workflowId: string, firstRunId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  for (let runId: string | undefined = firstRunId; runId;) {
    const history: { events?: HistoryEvent[] | null } = await sys.temporal.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    runs.push(events);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

/** The causes of the workflow task failures in a thread's history, across its runs (none, for a healthy thread). */
async function taskFailures(workflowId: string, firstRunId: string): Promise<string[]> {
  return (await allRuns(workflowId, firstRunId))
    .flat()
    .flatMap((e) =>
      e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes.failure?.message ?? 'failed'] : [],
    );
}

async function startThread(prefix: string) {
  const thread = await sys.client.startThread({ threadId: uid(prefix) });
  const { runId } = await thread.workflow.describe();
  return { thread, raw: sys.temporal.workflow.getHandle(thread.threadId), firstRunId: runId };
}

/** A thread that waits on a call of `wait_here`, whose result the test never sends. */
async function waitingThread(prefix: string) {
  const t = await startThread(prefix);
  await t.thread.sendUserText('call wait_here {}');
  const status = await eventually(async () => {
    const s = await t.thread.status();
    return s.pendingCall?.name === 'wait_here' && s.status === 'waiting_tool' ? s : undefined;
  });
  return { ...t, callId: status.pendingCall!.id };
}

/** The thread answers a user text: it reaches history and the model's reply follows it. */
async function answers(thread: Awaited<ReturnType<typeof startThread>>['thread'], text: string): Promise<void> {
  const id = uid('probe');
  await thread.sendUserText(text, id);
  await eventually(
    async () => {
      const items = await sys.store.load(thread.threadId);
      const at = items.findIndex((s) => s.messageId === id);
      return at >= 0 && items.slice(at + 1).some((s) => s.item.kind === 'assistant');
    },
    30_000,
    `the reply to '${text}'`,
  );
}

describe('the reported case: a prompt whose choices is not an array', () => {
  it('by the control signal: dropped as malformed, no workflow task fails, the next user text is answered', async () => {
    const { thread, raw, firstRunId, callId } = await waitingThread('choices');
    await raw.signal('control', choicePrompt(thread.threadId, callId, 'p1', { choices: 'x', default: 0 }));
    await answers(thread, 'still there?');
    expect(render(await thread.history()).slice(-2)).toEqual(['user: still there?', 'assistant: ok: still there?']);
    expect(await taskFailures(thread.threadId, firstRunId)).toEqual([]);
    const drops = await thread.workflow.query<DroppedInputs>('drops');
    expect(drops.counts).toEqual({ malformed: 1 });
    expect(drops.recent).toEqual([
      {
        id: 'p1',
        reason: 'malformed',
        what: 'control signal: input.synthetic.prompt.choices must be an array of 1..100 strings',
      },
    ]);
  });

  it('a well-formed prompt for the pending call is kept and shown', async () => {
    const { thread, raw, callId } = await waitingThread('choice-ok');
    await raw.signal('control', choicePrompt(thread.threadId, callId, 'p2'));
    const status = await eventually(async () => {
      const s = await thread.status();
      return s.prompts.length === 1 ? s : undefined;
    });
    expect(status.prompts[0]).toMatchObject({ kind: 'user_choice', choices: ['a', 'b'], toolCallId: callId });
    const details =
      ((await thread.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ??
      '';
    expect(details).toContain('asks the user: Pick [a / b] — choice `c1`');
  });
});

describe('an input release 0.5 took that the complete checks refuse', () => {
  it('stays in a 0.5 thread that the bridge moves and this release goes on with; a live thread drops it', async () => {
    // An input 0.5 took and committed: a user text with a field the runtime does not know.
    const odd = (threadId: string, id: string) => ({
      id,
      threadId,
      content: { type: 'text', text: 'odd but taken' },
      extra: { note: 'unknown to the runtime' },
    });
    const model = new ScriptedModel(treeScript);
    const old = await startTestSystem({ model, workflowBundlePath: releaseBundle('v0.5') });
    try {
      const thread = await old.client.startThread({ threadId: uid('recorded-05') });
      await old.temporal.workflow.getHandle(thread.threadId).signal('input', odd(thread.threadId, 'odd-1'));
      await thread.sendUserText('and then');
      await eventually(async () => render(await thread.history()).includes('assistant: ok: and then'));
      await thread.waitForIdle();
      expect(render(await thread.history())[0]).toBe('user: odd but taken');
      const before = render(await thread.history());
      // 0.5's run is outside this release's window: the bridge (0.12), which replays it taking the input, moves it.
      await old.worker!.shutdown();
      const [moved] = await moveThroughBridge(old, [thread.threadId], { model });
      expect(moved?.outcome).toBe('moved');
      const current = await replacementWorker(old, model);
      try {
        await thread.sendUserText('on this release');
        await eventually(
          async () => render(await thread.history()).at(-1) === 'assistant: ok: on this release' || undefined,
          30_000,
          'the answer on this release',
        );
        expect(render(await thread.history())).toEqual([
          ...before,
          'user: on this release',
          'assistant: ok: on this release',
        ]);
        const history = await thread.workflow.fetchHistory();
        expect(history.events?.filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
        await Worker.runReplayHistory(
          { workflowBundle: { codePath: inject('workflowBundlePath') } },
          history,
          thread.threadId,
        );
      } finally {
        await current.stop();
      }
    } finally {
      await old.shutdown();
    }
    const { thread, raw } = await startThread('live-06');
    await raw.signal('input', odd(thread.threadId, 'odd-2'));
    await answers(thread, 'after the odd one');
    const drops = await thread.workflow.query<DroppedInputs>('drops');
    expect(drops.recent).toEqual([
      { id: 'odd-2', reason: 'malformed', what: 'input signal: input has an unknown field "extra"' },
    ]);
    expect((await sys.store.load(thread.threadId)).map((s) => s.messageId)).not.toContain('odd-2');
  });
});

/** What the thread must do with a payload: the checks' verdict, on the payload as the workflow receives it. */
function verdict(name: SignalName, payload: unknown, threadId: string): InputMessage | undefined {
  const seen = withDefaults(name, JSON.parse(JSON.stringify(payload) ?? 'null') as unknown, threadId);
  const v = name === 'input' ? validateInputMessage(seen) : validateKindSignal(name, seen);
  if (!v.ok || v.value.threadId !== threadId) return undefined;
  if (name === 'input' && inputLimitViolation(seen) !== undefined) return undefined;
  return v.value;
}

/** The id a thread gives a signal by kind that has none (a new one, unknown here). */
const GENERATED_ID = '(an id the thread made)';

/** What 0.6 threads do first with a signal by kind: fill in a missing `threadId` (theirs) and `id` (a new one). */
function withDefaults(name: SignalName, seen: unknown, threadId: string): unknown {
  if (name === 'input' || typeof seen !== 'object' || seen === null || Array.isArray(seen)) return seen;
  const r = seen as Record<string, unknown>;
  if ((r.threadId !== undefined && r.id !== undefined) || Object.prototype.hasOwnProperty.call(r, '__proto__'))
    return seen;
  return { ...r, ...(r.threadId === undefined && { threadId }), ...(r.id === undefined && { id: GENERATED_ID }) };
}

/** A valid compaction request would start a compaction thread: not what this test is about. */
const isCompaction = (m: InputMessage | undefined) => m?.synthetic?.type === 'compaction';
const isControl = (m: InputMessage) =>
  m.synthetic?.type === 'prompt' || m.synthetic?.type === 'compaction' || m.synthetic?.type === 'compaction_complete';

async function inChunks<T, R>(items: readonly T[], send: (item: T) => Promise<R>, chunk = CHUNK): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += chunk) out.push(...(await Promise.all(items.slice(i, i + chunk).map(send))));
  return out;
}

describe(`generated hostile inputs (seed ${SEED}; HOSTILE_SEED=${SEED} reproduces)`, () => {
  it('on every signal name: no workflow task fails, each valid input is taken once, each drop counted', async () => {
    console.log(`hostile inputs: seed ${SEED}`);
    await Promise.all(
      SIGNAL_NAMES.map(async (name, n) => {
        // One generator per name, so the payloads do not depend on the order the threads start in.
        const r = rng(SEED + 1 + n);
        const { thread, raw, firstRunId } = await startThread(`hostile-${name}`);
        const threadId = thread.threadId;
        const payloads = Array.from({ length: PER_SIGNAL }, (_, i) =>
          generate(r, name, threadId, `${name}-${i}`),
        ).filter((g) => !isCompaction(verdict(name, g.payload, threadId)));
        const outcomes = await inChunks(payloads, (g) =>
          raw.signal(name, g.payload).then(
            () => ({ g, sent: true }),
            // The server refuses what it cannot take (a payload over its size limit): never in history.
            () => ({ g, sent: false }),
          ),
        );
        const sent = outcomes.filter((o) => o.sent).map((o) => o.g);
        const taken = sent.flatMap((g) => {
          const m = verdict(name, g.payload, threadId);
          return m ? [m] : [];
        });
        // A text whose id an earlier one already used is a second delivery of it (the generator repeats hostile ids
        // such as "javascript:alert(1)"): dropped as a duplicate, counted with the other drops below.
        const firstIds = new Set<string>();
        const texts = taken
          .filter(isUserText)
          .filter((m) => m.id === GENERATED_ID || (!firstIds.has(m.id) && Boolean(firstIds.add(m.id))));
        await answers(thread, `probe after ${name}`);
        await thread.waitForIdle();

        const where = `${name}, seed ${SEED}`;
        expect(await taskFailures(threadId, firstRunId), where).toEqual([]);
        // Every user text taken reached history exactly once; nothing else of what was sent did.
        const ids = (await sys.store.load(threadId)).map((s) => s.messageId);
        // Texts that came without an id are in history under ids the thread made: every text taken is one user item.
        const stored = await sys.store.load(threadId);
        const userIds = stored.filter((s) => s.item.kind === 'user').map((s) => s.messageId);
        expect(userIds.filter((id) => !id.startsWith('probe')).length, `user items (${where})`).toBe(texts.length);
        for (const m of texts.filter((t) => t.id !== GENERATED_ID))
          expect(
            ids.filter((id) => id === m.id),
            `${m.id} (${where})`,
          ).toHaveLength(1);
        const sentIds = new Set(sent.map((g) => (g.payload as { id?: unknown } | null)?.id));
        const textIds = new Set(texts.map((m) => m.id));
        expect(
          ids.filter((id) => sentIds.has(id) && !textIds.has(id)),
          where,
        ).toEqual([]);
        // Every drop is counted: the refused ones as malformed, the valid ones the thread has no use for by their
        // reason (a result or a prompt for no pending call, an event of no subscription, a report of no child).
        const { counts } = await thread.workflow.query<DroppedInputs>('drops');
        const { malformed = 0, ...others } = counts;
        expect(malformed, where).toBe(sent.length - taken.length);
        expect(
          Object.values(others).reduce((a, b) => a + (b ?? 0), 0),
          where,
        ).toBe(taken.length - texts.length);
        console.log(
          `hostile inputs on ${name}: ${sent.length} sent (${outcomes.length - sent.length} refused by the server), ` +
            `${taken.length} valid (${texts.length} user texts), counts ${JSON.stringify(counts)}`,
        );
      }),
    );
  }, 120_000);

  it('by the acknowledged deliver update: refused by its validator, or acknowledged; accepted texts taken once', async () => {
    const r = rng(SEED);
    const { thread, raw, firstRunId } = await startThread('hostile-deliver');
    const threadId = thread.threadId;
    const payloads = Array.from({ length: PER_UPDATE }, (_, i) =>
      generate(r, 'input', threadId, `deliver-${i}`),
    ).filter((g) => !isCompaction(verdict('input', g.payload, threadId)));
    const outcomes = await inChunks(
      payloads,
      (g) =>
        raw.executeUpdate<DeliveryAck, [unknown]>('deliver', { args: [g.payload] }).then(
          (ack) => ({ g, ack, error: undefined }),
          (e: unknown) => ({ g, ack: undefined, error: e }),
        ),
      UPDATES_AT_ONCE,
    );
    await answers(thread, 'probe after deliver');
    await thread.waitForIdle();

    const where = `deliver, seed ${SEED}`;
    expect(await taskFailures(threadId, firstRunId), where).toEqual([]);
    const ids = (await sys.store.load(threadId)).map((s) => s.messageId);
    let texts = 0;
    let others = 0;
    for (const { g, ack, error } of outcomes) {
      const m = verdict('input', g.payload, threadId);
      const what = `${g.how.join('; ')} (${where})`;
      if (!m) {
        // Refused by the validator (no trace in history) — or, too large for the server, refused there.
        expect(ack, what).toBeUndefined();
        expect(error, what).toBeDefined();
        continue;
      }
      expect(error, what).toBeUndefined();
      if (isUserText(m)) {
        texts += 1;
        expect(ack, what).toEqual({ accepted: true });
        expect(
          ids.filter((id) => id === m.id),
          what,
        ).toHaveLength(1);
      } else {
        others += 1;
        if (!isControl(m)) expect(ack, what).toMatchObject({ accepted: false });
        expect(ids, what).not.toContain(m.id);
      }
    }
    const { counts } = await thread.workflow.query<DroppedInputs>('drops');
    const { malformed = 0, ...rest } = counts;
    // The validator refuses before the input exists for the thread: nothing malformed to count.
    expect(malformed, where).toBe(0);
    expect(
      Object.values(rest).reduce((a, b) => a + (b ?? 0), 0),
      where,
    ).toBe(others);
    console.log(
      `hostile inputs by deliver: ${outcomes.length} sent, ${texts} texts accepted, counts ${JSON.stringify(counts)}`,
    );
  }, 120_000);
});
