/**
 * Provider limits hold a key at its limit (issue 41), end to end on a real dev server: three mock providers that
 * enforce their limits as documented (test/wire/rate-limited.ts), each reached through the project's real client over
 * loopback HTTP, each served by two workers on one store file configured with the provider's own figures:
 *
 * - a token bucket (Anthropic's algorithm: `rpm` requests, replenished continuously up to the bucket's size);
 * - a sliding window (at most `rpm` in any trailing 60 s, the worst case);
 * - a sliding window shared with another application that takes a third of it, so the key has less than the
 *   workers were told: the limiter learns the rest from the provider's rate-limit headers.
 *
 * Each provider gets a fleet of batch roots woken at once, in three tenants of weights 1, 1 and 2, with one user-facing
 * thread arriving in the middle. Asserted: at most 1 % of the requests were refused (429) over the three; while a fleet
 * was backlogged, its provider accepted at least 0.9 of what it allows (the rate for the first two; for the shared one,
 * what the other application left); no provider was ever past its limit; the weighted shares held; every thread
 * finished with its reply, none failed; the user's turn did not wait behind the fleet. Timings are the bench's; what is
 * printed here is the run's figures.
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ProviderLimits } from '../../src/core/capacity';
import { modelFromSpec } from '../../src/model/registry';
import type { ThreadHandle } from '../../src/client/thread-handle';
import { startTestSystem, type TestSystem, uid } from '../helpers';
import { capacityWaits } from '../capacity-waits';
import {
  type LimitAlgorithm,
  maxInAnyMinute,
  type RateLimitedProvider,
  startRateLimitedProvider,
} from '../wire/rate-limited';

/** Requests per minute each provider allows; fleets are sized to stay backlogged for over two minutes. */
const RPM = 60;
const THREADS = 140;
const MEASURED_MS = 120_000;
const WEIGHTS = [1, 1, 2];

interface Case {
  name: string;
  algorithm: LimitAlgorithm;
  /** Another application on the key, taking this many requests a minute. */
  othersRpm?: number;
}

const CASES: Case[] = [
  { name: 'token bucket', algorithm: 'token-bucket' },
  { name: 'sliding window', algorithm: 'sliding-window' },
  { name: 'shared key', algorithm: 'sliding-window', othersRpm: RPM / 3 },
];

interface Run {
  c: Case;
  provider: RateLimitedProvider;
  workers: [TestSystem, TestSystem];
}

const runs: Run[] = [];

beforeAll(async () => {
  for (const c of CASES) {
    const provider = await startRateLimitedProvider({
      algorithm: c.algorithm,
      rpm: RPM,
      ...(c.othersRpm !== undefined && { others: { rpm: c.othersRpm } }),
      // Each fleet thread's request says `wake <i>`: the thread's index (its tenant is i mod 3).
      tagOf: (body) => /wake (\d+)/.exec(body)?.[1],
    });
    const storePath = join(inject('scratchDir'), `fleet-limits-${randomUUID()}.sqlite`);
    // The provider's own figures: the key's full minute, even where another application uses part of it.
    const limits: ProviderLimits = { key: `fleet-${c.algorithm}-${c.othersRpm ?? 0}`, rpm: RPM };
    const model = () => modelFromSpec(provider.spec, { env: provider.env });
    const workers = (await Promise.all([
      startTestSystem({ model: model(), storePath, limits }),
      startTestSystem({ model: model(), storePath, limits }),
    ])) as [TestSystem, TestSystem];
    runs.push({ c, provider, workers });
  }
}, 180_000);

afterAll(async () => {
  for (const r of runs) {
    await Promise.all(r.workers.map((w) => w.shutdown()));
    await r.provider.close();
  }
});

/** Wakes the fleet of one provider and waits for it to drain; the figures of the run. */
async function drain(r: Run) {
  const { workers, provider } = r;
  const t0 = Date.now();
  const fleet = await Promise.all(
    Array.from({ length: THREADS }, async (_, i) => {
      const tenant = i % WEIGHTS.length;
      const sys = workers[i % 2]!;
      const thread = await sys.client.startThread({
        threadId: uid(`fleet-${tenant}`),
        priority: { priorityKey: 3, fairnessKey: `tenant-${tenant}`, fairnessWeight: WEIGHTS[tenant]! },
      });
      await thread.sendUserText(`wake ${i}`);
      return { tenant, thread };
    }),
  );
  // A person's turn, a minute in, while the fleet still waits.
  await new Promise((res) => setTimeout(res, 60_000));
  const user = await workers[0].client.startThread({ threadId: uid('user') });
  const u0 = Date.now();
  await user.sendUserText('my turn');
  await user.waitForIdle({ settled: true, timeoutMs: 120_000 });
  const userMs = Date.now() - u0;
  const doneAt = new Map<ThreadHandle, number>();
  await Promise.all(
    fleet.map(async ({ thread }) => {
      const status = await thread.waitForIdle({ settled: true, timeoutMs: 600_000 });
      doneAt.set(thread, Date.now());
      expect(status.lastError).toBeUndefined();
      expect(status.dropped).toEqual({});
    }),
  );
  const drainMs = Math.max(...doneAt.values()) - t0;
  const replies = await Promise.all(
    fleet.map(async ({ thread }) =>
      (await thread.history()).filter((h) => h.kind === 'assistant').map((h) => (h.kind === 'assistant' ? h.text : '')),
    ),
  );
  expect(replies.every((texts) => texts.length === 1 && texts[0] === 'done here')).toBe(true);
  const { accepted, requests, limited, othersAccepted } = provider.stats;
  const first = accepted[0]!;
  const inMeasured = accepted.filter((t) => t < first + MEASURED_MS).length;
  // What the provider allows the key over the measured two minutes, from its steady rate: its minute twice, less the
  // other application's share where there is one.
  const allowed = ((RPM - (r.c.othersRpm ?? 0)) * MEASURED_MS) / 60_000;
  // What waiting cost each thread, from its history: slice attempts (local activity markers), failed ones, timers and
  // wakes. With the wake-up list a thread is refused once and woken once, its timer only a fallback.
  const tallies = await Promise.all(fleet.map(({ thread }) => capacityWaits(thread)));
  // Tenants' shares while all were backlogged, in the order the limiter granted their requests: a woken thread's grant
  // is its last wake (the server's time of the `capacity` signal; its request reaches the provider 0.1–3 s later, so
  // arrivals at the provider may swap neighbours), any other's its arrival at the provider. Up to the grant of the
  // first tenant's last thread.
  const arrivedAt = new Map<number, number>();
  provider.stats.acceptedTags.forEach((tag, k) => tag !== undefined && arrivedAt.set(Number(tag), accepted[k]!));
  const grants = fleet
    .map(({ tenant }, i) => ({ tenant, at: tallies[i]!.lastWakeAt ?? arrivedAt.get(i) ?? Infinity }))
    .sort((x, y) => x.at - y.at);
  const lastOf = WEIGHTS.map((_, t) => grants.map((g) => g.tenant).lastIndexOf(t));
  const backlogged = Math.min(...lastOf);
  const byTenant = WEIGHTS.map((_, t) => grants.slice(0, backlogged + 1).filter((g) => g.tenant === t).length);
  const total = byTenant.reduce((a, b) => a + b, 0);
  const weightSum = WEIGHTS.reduce((a, b) => a + b, 0);
  const expectedOf = (t: number) => (total * WEIGHTS[t]!) / weightSum;
  const shareErrorPct = Math.max(...byTenant.map((n, t) => (100 * Math.abs(n - expectedOf(t))) / expectedOf(t)));
  // In requests: start-time fair queuing keeps each share within about one request of its weight.
  const shareErrorRequests = Math.max(...byTenant.map((n, t) => Math.abs(n - expectedOf(t))));
  const mean = (k: 'slices' | 'failed' | 'timers' | 'wakes') =>
    Math.round((100 * tallies.reduce((n, t) => n + t[k], 0)) / tallies.length) / 100;
  return {
    name: r.c.name,
    slicesPerThread: mean('slices'),
    failedSlicesPerThread: mean('failed'),
    timersPerThread: mean('timers'),
    wakesPerThread: mean('wakes'),
    requests,
    limited,
    accepted: accepted.length,
    othersAccepted,
    rateFraction: inMeasured / allowed,
    maxInAnyMinute: maxInAnyMinute([...accepted].sort((a, b) => a - b)),
    drainMs,
    // The drain the key allows: the fleet's requests at the provider's rate (less the other application's).
    allowedDrainMs: Math.round((THREADS * 60_000) / (RPM - (r.c.othersRpm ?? 0))),
    userMs,
    byTenant,
    shareErrorPct: Math.round(shareErrorPct),
    shareErrorRequests: Math.round(shareErrorRequests * 10) / 10,
  };
}

describe('three providers, each at its own figures, two workers each', () => {
  it('keeps 429s under 1 % and each key at ≥ 0.9 of what its provider allows', async () => {
    const results = await Promise.all(runs.map(drain));
    console.log(JSON.stringify(results, null, 2));
    const requests = results.reduce((n, r) => n + r.requests, 0);
    const limited = results.reduce((n, r) => n + r.limited, 0);
    expect(limited / requests, JSON.stringify(results)).toBeLessThanOrEqual(0.01);
    for (const r of results) {
      expect(r.rateFraction, r.name).toBeGreaterThanOrEqual(0.9);
      // The limiter's own log never let more than the minute through (the shared key's other application aside).
      expect(r.maxInAnyMinute, r.name).toBeLessThanOrEqual(RPM);
      // A person's turn did not wait for the fleet's backlog (over a minute of it).
      expect(r.userMs, r.name).toBeLessThan(15_000);
      // Tenants of weights 1, 1 and 2 were granted requests in proportion while all had threads waiting: each within
      // three requests of its weighted share of the ~95 (a light tenant's ~24: 12 %; 0–3 requests, 0–6 %, in the
      // runs so far, the most with another soak file beside it on two cores).
      expect(r.shareErrorRequests, r.name).toBeLessThanOrEqual(3);
      // Waiting cost no failed attempt, and about one refusal and one wake per thread, not a poll every few seconds.
      expect(r.failedSlicesPerThread, r.name).toBe(0);
      expect(r.slicesPerThread, r.name).toBeLessThanOrEqual(2.5);
    }
  }, 900_000);
});
