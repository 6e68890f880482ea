/**
 * Model routing's decisions (issue 40 §4): which failures make a model unavailable so the next one serves the round,
 * how a slice whose rounds ran on two models is priced, and when a limits key's gate moves a round on (`KeyClosed`)
 * rather than refusing the slice to the workflow (`Throttled`).
 */
import { APICallError } from '@ai-sdk/provider';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { capacityGate, KeyClosed } from '../../src/activities/capacity-gate';
import { routedSpend, routedSpendByModel, unavailableReason } from '../../src/activities/model-routing';
import { StreamTimeout } from '../../src/activities/retry';
import { SLICE_REFUSED } from '../../src/core/slice-protocol';
import type { ModelRequest } from '../../src/model/provider';
import { ModelStreamEndedError } from '../../src/model/provider';
import { InMemoryConversationStore } from '../../src/store/memory';

const http = (statusCode: number, message = `HTTP ${statusCode}`) =>
  new APICallError({ message, url: 'http://127.0.0.1/v1/messages', requestBodyValues: {}, statusCode });

describe('unavailableReason', () => {
  it.each([
    [http(529, 'Overloaded'), 'overloaded, HTTP 529'],
    [http(500), 'server error, HTTP 500'],
    [http(503), 'server error, HTTP 503'],
    [http(408), 'request timeout, HTTP 408'],
    [http(429, 'Rate limit reached. Please try again.'), 'rate limited, HTTP 429'],
    [http(401), 'not authorized, HTTP 401'],
    [http(403), 'not authorized, HTTP 403'],
    [http(404), 'model not found, HTTP 404'],
    [new Error('{"type":"overloaded_error","message":"Overloaded"}'), 'overloaded'],
    [new StreamTimeout(), 'timed out initiating the request'],
    [new ModelStreamEndedError('socket hang up'), 'the stream ended before any output'],
    [new KeyClosed('key-a', 'backoff', 90_000), 'limits key key-a closed (backoff) for 90 s'],
  ])('routes %s before anything arrived', (failure, reason) => {
    expect(unavailableReason(failure, false)).toBe(reason);
  });

  it.each([
    [http(400, 'prompt is too long')],
    [http(413)],
    [http(422)],
    [new Error('this provider throws before it streams')],
  ])('does not route a refused request (%s)', (failure) => {
    expect(unavailableReason(failure, false)).toBeUndefined();
  });

  it('does not route once part of the attempt arrived: the model was serving', () => {
    expect(unavailableReason(http(529), true)).toBeUndefined();
    expect(unavailableReason(new StreamTimeout(), true)).toBeUndefined();
    expect(unavailableReason(new ModelStreamEndedError('cut'), true)).toBeUndefined();
  });
});

describe('routedSpend', () => {
  const prices = { 'model-a': { input: 10, output: 100 }, 'model-b': { input: 1, output: 2 } };

  it('prices one model as before', () => {
    const usage = { inputTokens: 1_000, outputTokens: 100, totalTokens: 1_100 };
    expect(routedSpend({ model: 'p:model-b', usage, usageByModel: [{ model: 'p:model-b', usage }] }, prices)).toEqual({
      inputTokens: 1_000,
      outputTokens: 100,
      totalTokens: 1_100,
      usd: (1_000 * 1 + 100 * 2) / 1e6,
      unpriced: false,
    });
    // A slice that got no usage at all is priced (as nothing) by the model that served it.
    expect(routedSpend({ model: 'c:unpriced', usageByModel: [] }, prices)).toMatchObject({ usd: 0, unpriced: true });
    expect(routedSpend({ model: 'p:model-a', usageByModel: [] }, prices)).toMatchObject({ usd: 0, unpriced: false });
  });

  it('prices each model its own rounds after a switch', () => {
    const a = { inputTokens: 100, outputTokens: 10, totalTokens: 110 };
    const b = { inputTokens: 300, outputTokens: 20, totalTokens: 320 };
    const usageByModel = [
      { model: 'p:model-a', usage: a },
      { model: 'p:model-b', usage: b },
    ];
    const spend = routedSpend({ model: 'p:model-b', usageByModel }, prices);
    expect(spend).toMatchObject({ inputTokens: 400, outputTokens: 30, totalTokens: 430, unpriced: false });
    expect(spend.usd).toBeCloseTo((100 * 10 + 10 * 100 + 300 * 1 + 20 * 2) / 1e6, 12);
    const unpricedSecond = routedSpend(
      { model: 'c:x', usageByModel: [usageByModel[0]!, { model: 'c:x', usage: b }] },
      prices,
    );
    expect(unpricedSecond.unpriced).toBe(true);
    expect(unpricedSecond.usd).toBeCloseTo((100 * 10 + 10 * 100) / 1e6, 12);
  });

  it('splits the spend by model (usage --by-model): the parts sum to the slice', () => {
    const a = { inputTokens: 100, outputTokens: 10, totalTokens: 110 };
    const b = { inputTokens: 300, outputTokens: 20, totalTokens: 320 };
    const out = {
      model: 'c:x',
      usageByModel: [
        { model: 'p:model-a', usage: a },
        { model: 'c:x', usage: b },
      ],
    };
    const parts = routedSpendByModel(out, prices);
    expect(parts).toEqual([
      { model: 'p:model-a', amount: { ...a, usd: (100 * 10 + 10 * 100) / 1e6, unpriced: false } },
      { model: 'c:x', amount: { ...b, usd: 0, unpriced: true } },
    ]);
    expect(parts.reduce((n, p) => n + p.amount.totalTokens, 0)).toBe(routedSpend(out, prices).totalTokens);
    // One model, or none that finished a round: the whole slice, under the model that served it.
    expect(routedSpendByModel({ model: 'p:model-b', usageByModel: [] }, prices)).toEqual([
      { model: 'p:model-b', amount: { inputTokens: 0, outputTokens: 0, totalTokens: 0, usd: 0, unpriced: false } },
    ]);
  });
});

describe('a limits key closed longer than the agent waits', () => {
  const request: ModelRequest = { threadId: 't', system: '', messages: [], tools: [] };
  const limits = { rpm: 600, reserve: 0 };
  const closedGate = async (key: string, closedMs: number) => {
    const store = new InMemoryConversationStore();
    await store.capacity.backoff(key, { ...limits, key }, closedMs);
    return capacityGate(store, { ...limits, key }, 'model-a', true, undefined)!;
  };
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'granted',
      (e: unknown) => (e instanceof KeyClosed ? 'routed' : e instanceof ApplicationFailure ? e.type : String(e)),
    );

  it('moves the first round on when the wait exceeds closedForMs and a next model exists', async () => {
    const gate = await closedGate('key-long', 30_000);
    const signal = new AbortController().signal;
    await expect(refusal(gate.acquire(request, 0, signal, 1_000))).resolves.toBe('routed');
    const e = await gate.acquire(request, 0, signal, 1_000).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KeyClosed);
    expect((e as KeyClosed).key).toBe('key-long');
    expect((e as KeyClosed).reason).toBe('backoff');
    expect((e as KeyClosed).retryAfterMs).toBeGreaterThan(1_000);
    // Without a next model, or with a wait within closedForMs, the slice is refused to the workflow as before.
    await expect(refusal(gate.acquire(request, 0, signal))).resolves.toBe(SLICE_REFUSED.throttled);
    await expect(refusal(gate.acquire(request, 0, signal, 60_000))).resolves.toBe(SLICE_REFUSED.throttled);
  });

  it('moves a later round on too, instead of waiting in the slice', async () => {
    const gate = await closedGate('key-later', 30_000);
    await expect(refusal(gate.acquire(request, 2, new AbortController().signal, 1_000))).resolves.toBe('routed');
  });

  it("moves on after a provider's 429 whose wait exceeds closedForMs, recording the backoff for the fleet", async () => {
    const store = new InMemoryConversationStore();
    const gate = capacityGate(store, { ...limits, key: 'key-429' }, 'model-a', true, undefined)!;
    const signal = new AbortController().signal;
    const lease = await gate.acquire(request, 0, signal, 1_000);
    await lease.release();
    await expect(refusal(gate.rateLimited(30_000, 0, lease, undefined, 1_000))).resolves.toBe('routed');
    // The key stays closed for every worker: the next request, with no next model, is refused.
    await expect(refusal(gate.acquire(request, 0, signal))).resolves.toBe(SLICE_REFUSED.throttled);
    // A short wait keeps today's refusal of the first round.
    await expect(refusal(gate.rateLimited(500, 0, undefined, undefined, 1_000))).resolves.toBe(SLICE_REFUSED.throttled);
  });
});
