/**
 * Provider limits shared by the fleet (issue 27 §2), end to end on a real dev server: two workers on one store file
 * keep their model calls within one shared concurrency, threads that find no capacity wait on workflow timers (no
 * failed slice, no error shown, nothing dropped), and a provider's 429 — from a real provider client against a local
 * server speaking the OpenAI wire protocol — makes every thread on the key wait out its Retry-After.
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ModelProvider, ModelRequest, ModelStreamPart } from '../src/model/provider';
import { modelFromSpec } from '../src/model/registry';
import { capacityGate } from '../src/activities/capacity-gate';
import { type ProviderLimits, RELEASE_SETTLE_MS } from '../src/core/capacity';
import { DEFAULT_COMPLETION_POLICY, runCompletion } from '../src/activities/completion';
import { InMemoryConversationStore } from '../src/store/memory';
import { ScriptedModel } from '../src/model/scripted';
import type { ThreadHandle } from '../src/client/thread-handle';
import type { StartThreadOptions } from '../src/client/agent-client';
import type { ThreadOptions } from '../src/workflows/contract';
import { writeFileSync } from 'node:fs';
import { cliRunner, waitForLine } from './cli-process';
import { checkReplay, eventually, startTestSystem, type TestSystem, uid } from './helpers';
import { capacityWaits } from './capacity-waits';
import { openAiResponsesDialect } from './wire/openai-responses';
import { startWireServer, type WireServer } from './wire/server';

/** Counts the calls in flight across every model made from it (one process, two workers). */
function concurrencyProbe() {
  const probe = { inFlight: 0, max: 0, calls: 0 };
  const wrap = (inner: ModelProvider): ModelProvider => ({
    id: inner.id,
    stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
      return (async function* () {
        probe.calls++;
        probe.max = Math.max(probe.max, ++probe.inFlight);
        try {
          yield* inner.stream(request, signal);
        } finally {
          probe.inFlight--;
        }
      })();
    },
  });
  return { probe, wrap };
}

/**
 * A model that records its calls in the order they began: the thread each served (read from the system prompt) and how
 * many other calls were in flight then.
 */
function observedModel(inner: ModelProvider) {
  const inFlight = new Set<string>();
  const began: { thread: string; others: number }[] = [];
  const model: ModelProvider = {
    id: inner.id,
    stream(request: ModelRequest, signal: AbortSignal) {
      const thread = /current thread ID is `([^`]+)`/.exec(request.system)?.[1] ?? '?';
      return (async function* () {
        began.push({ thread, others: inFlight.size });
        inFlight.add(thread);
        try {
          yield* inner.stream(request, signal);
        } finally {
          inFlight.delete(thread);
        }
      })();
    },
  };
  return { model, began };
}

/**
 * Some of `threads` waited for capacity (a timer), none failed a slice activity, and one that waited replays (recorded
 * for the replay gate as `name`).
 */
async function expectWaitedWithoutFailures(threads: { thread: ThreadHandle }[], name: string) {
  const histories = await Promise.all(threads.map(({ thread }) => capacityWaits(thread)));
  expect(
    histories.reduce((n, h) => n + h.timers, 0),
    'some threads waited for capacity',
  ).toBeGreaterThan(0);
  expect(histories.map((h) => h.failedActivities + h.failed)).toEqual(histories.map(() => 0));
  await checkReplay(threads[histories.findIndex((h) => h.timers > 0)]!.thread, name);
}

const replies = async (thread: ThreadHandle) =>
  (await thread.history()).flatMap((h) => (h.kind === 'assistant' ? [h.text] : []));

/** Two workers on one store file under `limits`, each with a slow scripted model; the calls in flight, observed. */
function twoWorkers(limits: ProviderLimits, text: string, chunks: number, threadOptions?: ThreadOptions) {
  const { probe, wrap } = concurrencyProbe();
  const workers: TestSystem[] = [];
  beforeAll(async () => {
    const storePath = join(inject('scratchDir'), `limits-${randomUUID()}.sqlite`);
    const model = () => wrap(new ScriptedModel(() => ({ text, chunks, delayMs: 55 })));
    workers.push(
      ...(await Promise.all([
        startTestSystem({ model: model(), storePath, limits, ...(threadOptions && { threadOptions }) }),
        startTestSystem({ model: model(), storePath, limits, ...(threadOptions && { threadOptions }) }),
      ])),
    );
  });
  afterAll(async () => {
    for (const w of workers) await w.shutdown();
  });
  /** `n` threads woken at once across both workers; each answered once, none failed. */
  const wake = async (n: number, startOptions: Omit<StartThreadOptions, 'threadId'> = {}) => {
    const threads = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const sys = workers[i % 2]!;
        const thread = await sys.client.startThread({ threadId: uid('limited'), ...startOptions });
        await thread.sendUserText(`hello ${i}`);
        return { sys, thread };
      }),
    );
    for (const { thread } of threads) {
      const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
      expect(status.dropped).toEqual({});
      expect(status.lastError).toBeUndefined();
      expect(await replies(thread)).toEqual([text]);
    }
    return threads;
  };
  return { probe, wake };
}

describe('two workers on one store share one concurrency limit', () => {
  const { probe, wake } = twoWorkers({ key: 'shared-key', concurrency: 2, reserve: 0 }, 'answered slowly', 4);

  it('never has more calls in flight than the limit; the others wait, none fails', async () => {
    const threads = await wake(12);
    expect(probe.calls).toBe(12);
    expect(probe.max).toBe(2);
    // A thread that waited for capacity on a timer replays (and is recorded for the replay gate).
    await expectWaitedWithoutFailures(threads, 'limits-waited-for-capacity');
  });
});

describe("background threads wait on the key's wake-up list", () => {
  const { probe, wake } = twoWorkers({ key: 'woken-key', concurrency: 1, reserve: 0 }, 'answered in turn', 3);

  it('are signalled when a grant is held for them: no failed attempt, no poll, every fallback timer cancelled', async () => {
    // Batch roots (priority key 3) on two workers: background slices, refused at once but for the first.
    const threads = await wake(8, { priority: { priorityKey: 3 } });
    expect(probe.calls).toBe(8);
    expect(probe.max).toBe(1);
    const tallies = await Promise.all(threads.map(({ thread }) => capacityWaits(thread)));
    // Seven waited: each was refused once (as the slice's result, not a failure), woken once, and ran once more.
    expect(tallies.filter((t) => t.wakes > 0).length).toBeGreaterThanOrEqual(6);
    for (const t of tallies) {
      expect(t.failed).toBe(0);
      expect(t.timersFired, 'no fallback timer fired: the wake came first').toBe(0);
      expect(t.slices).toBeLessThanOrEqual(t.wakes > 0 ? 2 : 1);
    }
    // A thread woken from the list replays (and is recorded for the replay gate).
    const woken = threads[tallies.findIndex((t) => t.wakes > 0)]!;
    await checkReplay(woken.thread, 'limits-woken-from-the-wake-up-list');
  });
});

describe('without local slices', () => {
  const { probe, wake } = twoWorkers({ key: 'remote-key', concurrency: 1, reserve: 0 }, 'answered remotely', 3, {
    localSliceBudgetMs: 0,
  });

  it('a refused slice of the regular activity is its result too: no failed activity in history', async () => {
    const threads = await wake(6);
    expect(probe.max).toBe(1);
    await expectWaitedWithoutFailures(threads, 'limits-refused-remote-slice');
  });
});

describe('fair shares of a key', () => {
  const { model, began } = observedModel(new ScriptedModel(() => ({ text: 'done', chunks: 2, delayMs: 60 })));
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ model, limits: { key: 'shared-by-weight', concurrency: 1, reserve: 0 } });
  });
  afterAll(async () => sys?.shutdown());

  it('gives the threads of each fairness key calls in proportion to its weight while both wait', async () => {
    // Twelve threads of a key of weight 3 and twelve of a key of weight 1, all woken at once, one call at a time.
    const shares = { heavy: 3, light: 1 } as const;
    const threads = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const key = i % 2 ? 'heavy' : 'light';
        const thread = await sys.client.startThread({
          threadId: uid(key),
          priority: { fairnessKey: key, fairnessWeight: shares[key] },
        });
        return { key, thread };
      }),
    );
    await Promise.all(threads.map(({ thread }) => thread.sendUserText('go')));
    for (const { thread } of threads) {
      const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
      expect(status.lastError).toBeUndefined();
      expect(await replies(thread)).toEqual(['done']);
    }
    const keyOf = new Map(threads.map(({ key, thread }) => [thread.threadId, key]));
    const order = began.map((b) => keyOf.get(b.thread)).filter((k) => k !== undefined);
    expect(order).toHaveLength(24);
    // While both keys wait (the first 16 calls: 12 of 16 by weight, 8 of 16 without it), the heavier gets ~3 in 4.
    const heavy = order.slice(0, 16).filter((k) => k === 'heavy').length;
    expect(heavy, order.join(' ')).toBeGreaterThanOrEqual(10);
  });
});

describe("a key's reserve", () => {
  const { model, began } = observedModel(new ScriptedModel(() => ({ text: 'done', chunks: 6, delayMs: 250 })));
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ model, limits: { key: 'reserved', concurrency: 4, reserve: 0.5 } });
  });
  afterAll(async () => sys?.shutdown());

  it('keeps part of the key for user-facing threads: batch roots (priority 3 or later) leave it free', async () => {
    // Six batch roots woken at once may use half of the key (2 calls); a user's root (default priority 2) may use all.
    const batch = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const thread = await sys.client.startThread({ threadId: uid('batch'), priority: { priorityKey: 3 } });
        await thread.sendUserText('go');
        return thread;
      }),
    );
    await eventuallyTrue(() => began.filter((b) => b.thread.startsWith('batch')).length >= 2);
    const user = await sys.client.startThread({ threadId: uid('user') });
    await user.sendUserText('my turn');
    for (const thread of [...batch, user]) {
      const status = await thread.waitForIdle({ settled: true, timeoutMs: 120_000 });
      expect(status.lastError).toBeUndefined();
    }
    const batchCalls = began.filter((b) => b.thread.startsWith('batch'));
    expect(batchCalls).toHaveLength(6);
    // No batch call began while two others were in flight; the user's call did not wait for the batch to drain.
    expect(Math.max(...batchCalls.map((b) => b.others))).toBeLessThanOrEqual(1);
    const mine = began.find((b) => b.thread === user.threadId)!;
    expect(mine.others, began.map((b) => `${b.thread.split('-')[0]}:${b.others}`).join(' ')).toBeGreaterThanOrEqual(1);
  });
});

describe("a provider's 429 backs every thread on the key off", () => {
  let server: WireServer;
  let sys: TestSystem;
  beforeAll(async () => {
    server = await startWireServer(openAiResponsesDialect);
    const model = modelFromSpec('openai:gpt-test', {
      env: { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${server.url}/v1` },
    });
    sys = await startTestSystem({ model, limits: { rpm: 6_000, reserve: 0 } });
  });
  afterAll(async () => {
    await sys?.shutdown();
    await server?.close();
  });

  it('waits out Retry-After on a workflow timer, with no call to the provider meanwhile', async () => {
    server.reply(
      { kind: 'error', status: 429, message: 'Rate limit reached. Please try again.', retryAfterSeconds: 2 },
      { kind: 'turn', turn: { text: ['first, after the wait'] } },
      { kind: 'turn', turn: { text: ['second, after the wait'] } },
    );
    const first = await sys.client.startThread({ threadId: uid('rate-limited') });
    await first.sendUserText('one');
    // The first request (the 429) under load may come later than any fixed pause: wait for it, then look within the
    // two seconds it asked for.
    await eventually(() => server.requests.length > 0 || undefined, 30_000, 'the first request');
    // Waiting for the key to open is part of a turn: the thread shows running, not idle.
    expect((await first.status()).status).toBe('running');
    const second = await sys.client.startThread({ threadId: uid('rate-limited') });
    await second.sendUserText('two');
    for (const thread of [first, second]) {
      const status = await thread.waitForIdle({ settled: true, timeoutMs: 60_000 });
      expect(status.lastError).toBeUndefined();
      expect(status.dropped).toEqual({});
    }
    expect(await replies(first)).toHaveLength(1);
    expect(await replies(second)).toHaveLength(1);
    const [limited, ...after] = server.requests.slice(-3);
    expect(after).toHaveLength(2);
    // Nobody called the provider during the two seconds it asked for.
    for (const r of after) expect(r.at - limited!.at).toBeGreaterThanOrEqual(1_900);
    expect((await capacityWaits(first)).timers).toBeGreaterThanOrEqual(1);
    expect((await capacityWaits(second)).timers).toBeGreaterThanOrEqual(1);
    await checkReplay(first, 'limits-rate-limited-wait');
  });
});

it('come from the worker command line: a worker with --limits serves threads under them; bad files are usage errors', async () => {
  const taskQueue = uid('limits-cli');
  const dir = inject('scratchDir');
  const store = join(dir, `${taskQueue}.sqlite`);
  const runner = cliRunner(
    () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store],
    {
      INFINITY_SIMULATED_DELAY_MS: '10',
    },
  );
  const file = (name: string, body: string) => {
    const path = join(dir, `${taskQueue}-${name}.json`);
    writeFileSync(path, body);
    return path;
  };
  for (const [path, message] of [
    [join(dir, 'no-such-limits.json'), '--limits: cannot read'],
    [file('negative', '{"rpm": -1}'), 'limits.rpm must be a positive number'],
    [file('unknown', '{"rps": 5}'), 'limits.rps is not a limit'],
    [file('broken', '{"rpm": '), '--limits: cannot read'],
  ] as const) {
    const usage = await runner.run('worker', '--model', 'simulated', '--no-events', '--limits', path);
    expect(usage, path).toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
  }
  const worker = runner.start([
    'worker',
    '--model',
    'simulated',
    '--no-events',
    '--limits',
    file('good', JSON.stringify({ key: 'cli-key', rpm: 60, concurrency: 1 })),
  ]);
  try {
    expect(await waitForLine(worker, /^provider limits · (.*)$/)).toBe('key cli-key · 60 requests/min · 1 at once');
    const threadId = uid('limits-cli-thread');
    expect((await runner.run('send', threadId, 'Is build 3 green?')).code).toBe(0);
    expect((await runner.run('tail', threadId, '--until-idle')).code).toBe(0);
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('close', r));
  }
}, 120_000);

it('ends the lease of a request whose provider throws at once, so the capacity is not held for good', async () => {
  const store = new InMemoryConversationStore();
  const limits = { key: 'throws', concurrency: 1, reserve: 0 };
  const broken: ModelProvider = {
    id: 'broken',
    stream() {
      throw new Error('this provider throws before it streams');
    },
  };
  const out = await runCompletion({
    threadId: 't',
    sliceId: 's',
    system: '',
    history: [{ kind: 'user', text: 'hi' }],
    tools: new Map(),
    model: broken,
    policy: { ...DEFAULT_COMPLETION_POLICY, maxRetries: 2 },
    signal: new AbortController().signal,
    emit: () => undefined,
    toolContext: () => {
      throw new Error('no tools');
    },
    capacity: capacityGate(store, limits, broken.id, true, undefined),
  });
  expect(out.error).toBe('this provider throws before it streams');
  // The slot is free once it has settled (RELEASE_SETTLE_MS), not when the lease would have expired (30 s).
  await new Promise((r) => setTimeout(r, RELEASE_SETTLE_MS + 10));
  const next = { key: 'throws', limits, tokens: 1, foreground: true, leaseMs: 30_000, leaseId: 'next' };
  expect(await store.capacity.acquire(next)).toMatchObject({ granted: true });
});

/** Waits until `check` holds (30 s at most). */
const eventuallyTrue = (check: () => boolean) => eventually(() => check() || undefined, 30_000, 'the condition');
