/**
 * The `governed` phase (issue 27 §3, issue 41): a fleet woken at once against a provider that enforces its own limits
 * with real 429s, run twice per provider in one process — without provider limits, and with `limits` set to the
 * provider's. Two mock providers (test/wire/rate-limited.ts), each reached through the project's real client: a
 * sliding window (OpenAI chat wire: at most `rpm` in any trailing minute) and a token bucket (Anthropic's documented
 * algorithm and wire: `rpm` requests replenished continuously), both with `concurrency` at once, `429` with
 * `retry-after` otherwise, and their rate-limit headers on every answer. Each provider's result also says the drain
 * time its key allows for the requests it accepted (`allowedDrainMs`). `threads` roots in `tenants` tenants (Temporal fairness keys: the first half of weight 1, the
 * rest of weight 2) each get one user text at the same moment, while one user-facing root does a turn every second
 * (its latency measured quiet first, then under the burst). One tenant has a token budget that covers about half its
 * threads: once every other tenant is done, the phase reads its overshoot, lifts the budget and waits for the rest of
 * its threads. Each run has its own dev server, store and provider.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import type { ProviderLimits } from '../../src/core/capacity';
import { startDevServer } from '../../src/devserver/server';
import { modelFromSpec } from '../../src/model/registry';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { createAgentWorker } from '../../src/worker/create-worker';
import {
  allowedDrainMs,
  type LimitAlgorithm,
  type RateLimitedProvider,
  startRateLimitedProvider,
} from '../../test/wire/rate-limited';
import { percentile } from '../lib/stats';

export interface GovernedConfig {
  threads: number;
  tenants: number;
  rpm: number;
  concurrency: number;
}

/** One run of the phase. */
export interface GovernedRun {
  provider429s: number;
  providerRequests: number;
  /** Completions of the fleet (the user thread's turns apart). */
  completions: number;
  /** From the wake-up to the last completion of a tenant without a budget. */
  drainMs: number;
  userIdleP50Ms: number;
  userP50Ms: number;
  /** Per tenant without a budget: completions while every such tenant still had threads waiting. */
  tenantCompletions: number[];
  /** The largest deviation, in %, of a tenant's share of those completions from its weight's share. */
  tenantShareErrorMaxPct: number;
  /** The budgeted tenant's spend beyond its limit when the others were done, in tokens. */
  budgetOvershootMaxTokens: number;
  /** The budgeted tenant's threads that had finished by then, and all of them once the budget was lifted. */
  budgetedDoneBeforeRaise: number;
  budgetedDoneAfterRaise: number;
  budgetedThreads: number;
}

/** Both runs against one provider. */
export interface GovernedProvider {
  algorithm: LimitAlgorithm;
  off: GovernedRun;
  on: GovernedRun;
  /** The drain time the key allows for the requests the provider accepted in the run with limits (its algorithm's bound, or its concurrency's). */
  allowedDrainMs: number;
}

export interface GovernedResult extends GovernedConfig {
  /** The sliding-window provider's runs (as before issue 41). */
  off: GovernedRun;
  on: GovernedRun;
  /** Per provider: the sliding window's, then the token bucket's. */
  providers?: GovernedProvider[];
}

/** Tokens a completion of the mock provider reports using. */
const USAGE = { input: 400, output: 20 };
/** Tenant t's weight: the first half 1, the rest 2. */
const weightOf = (t: number, tenants: number) => (t < tenants / 2 ? 1 : 2);
/** The tenant with a budget: the last one (weight 2, so the others' shares are measured over both weights). */
const budgetedTenant = (tenants: number) => tenants - 1;
const DRAIN_LIMIT_MS = 600_000;

/** The largest deviation, in %, of each count's share of the total from its weight's share. */
export function shareErrorMaxPct(counts: number[], weights: number[]): number {
  const total = counts.reduce((a, b) => a + b, 0);
  const weightSum = weights.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  return Math.max(
    ...counts.map((n, i) => {
      const expected = (total * weights[i]!) / weightSum;
      return (100 * Math.abs(n - expected)) / expected;
    }),
  );
}

async function runOnce(
  cfg: GovernedConfig,
  algorithm: LimitAlgorithm,
  limited: boolean,
  say: (s: string) => void,
): Promise<GovernedRun & { accepted: number; callMs: number }> {
  const { threads, tenants, rpm, concurrency } = cfg;
  const work = mkdtempSync(join(tmpdir(), 'infinity-governed-'));
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const provider: RateLimitedProvider = await startRateLimitedProvider({ algorithm, rpm, concurrency, usage: USAGE });
  const store = new SqliteConversationStore(join(work, 'store.sqlite'));
  const finished = new Map<string, () => void>();
  const doneAt = new Map<string, number>();
  const limits: ProviderLimits = { key: 'governed', rpm, concurrency };
  const taskQueue = 'governed';
  const worker = await createAgentWorker({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue,
    store,
    model: modelFromSpec(provider.spec, { env: provider.env }),
    // The runtime's own retry after a 429 honours Retry-After; keep its fallback wait short.
    completionPolicy: { rateLimitWaitMs: 1_000 },
    ...(limited && { limits }),
    onEvent: (e) => {
      if (e.type === 'completion_finished') {
        doneAt.set(e.threadId, Date.now());
        finished.get(e.threadId)?.();
      }
    },
  });
  const running = worker.run();
  const client = new AgentClient({
    client: new Client({ connection: await Connection.connect({ address: server.address }) }),
    taskQueue,
    store,
  });
  try {
    const user = await client.startThread({ threadId: `user-${limited}-${Date.now()}` });
    const turn = async (i: number) => {
      const done = new Promise<void>((r) => finished.set(user.threadId, r));
      const t0 = performance.now();
      await user.sendUserText(`turn ${i}`);
      await done;
      return performance.now() - t0;
    };
    const idle: number[] = [];
    for (let i = 0; i < 5; i++) idle.push(await turn(i));

    const budgeted = budgetedTenant(tenants);
    const tenantOf = (i: number) => i % tenants;
    const budgetedThreads = Array.from({ length: threads }, (_, i) => i).filter((i) => tenantOf(i) === budgeted).length;
    // About half of what its threads need: the rest wait over budget until it is lifted.
    const budgetTokens = Math.floor(budgetedThreads / 2) * (USAGE.input + USAGE.output);
    await client.setBudget({ tenant: `tenant-${budgeted}` }, { totalTokens: budgetTokens });

    const requestsBefore = provider.stats.requests;
    const limitedBefore = provider.stats.limited;
    const acceptedBefore = provider.stats.accepted.length;
    const answeringBefore = provider.stats.answeringMs;
    const t0 = Date.now();
    const run = `${algorithm}, ${limited ? 'with' : 'without'} limits`;
    say(`${run}: waking ${threads} threads in ${tenants} tenants`);
    const ids = await Promise.all(
      Array.from({ length: threads }, async (_, i) => {
        const threadId = `fleet-${limited}-${i}-${t0}`;
        const t = tenantOf(i);
        await client.startThread({
          threadId,
          tenant: `tenant-${t}`,
          // A fleet woken by one event is batch work (priority 3): the user-facing thread (2) keeps the key's reserve.
          priority: { priorityKey: 3, fairnessKey: `tenant-${t}`, fairnessWeight: weightOf(t, tenants) },
        });
        await client.thread(threadId).sendUserText(`wake ${i}`);
        return threadId;
      }),
    );
    const others = ids.filter((_, i) => tenantOf(i) !== budgeted);
    const mine = ids.filter((_, i) => tenantOf(i) === budgeted);
    const busy: number[] = [];
    let turns = 5;
    while (others.some((id) => !doneAt.has(id)) && Date.now() - t0 < DRAIN_LIMIT_MS) {
      busy.push(await turn(turns++));
      say(`${run}: ${doneAt.size - 1} of ${threads} done`);
      await sleep(1_000);
    }
    const drainMs = Math.max(...others.map((id) => doneAt.get(id) ?? Date.now())) - t0;
    // Accepted by the provider until the drain: what the key's allowance had to cover.
    const accepted = provider.stats.accepted.filter((at) => at <= t0 + drainMs).length - acceptedBefore;
    const answered = provider.stats.accepted.length - acceptedBefore;
    const callMs = answered > 0 ? (provider.stats.answeringMs - answeringBefore) / answered : 0;

    // The budgeted tenant: what it spent beyond its limit, then the rest of its threads once the limit is lifted.
    const [state] = await client.budgets({ tenant: `tenant-${budgeted}` });
    const overshoot = Math.max(0, (state?.spend.totalTokens ?? 0) - budgetTokens);
    const budgetedDoneBeforeRaise = mine.filter((id) => doneAt.has(id)).length;
    await client.setBudget({ tenant: `tenant-${budgeted}` }, null);
    const raisedAt = Date.now();
    while (mine.some((id) => !doneAt.has(id)) && Date.now() - raisedAt < DRAIN_LIMIT_MS) await sleep(250);

    // Shares while every tenant without a budget still had threads waiting: until the first one's last completion.
    const measured = Array.from({ length: tenants }, (_, t) => t).filter((t) => t !== budgeted);
    const lastOf = measured.map((t) =>
      Math.max(...ids.filter((_, i) => tenantOf(i) === t).map((id) => doneAt.get(id) ?? Infinity)),
    );
    const backlogged = Math.min(...lastOf);
    const tenantCompletions = measured.map(
      (t) => ids.filter((id, i) => tenantOf(i) === t && (doneAt.get(id) ?? Infinity) <= backlogged).length,
    );
    return {
      accepted,
      callMs,
      provider429s: provider.stats.limited - limitedBefore,
      providerRequests: provider.stats.requests - requestsBefore,
      completions: ids.filter((id) => doneAt.has(id)).length,
      drainMs,
      userIdleP50Ms: Math.round(percentile(idle, 50)),
      userP50Ms: Math.round(percentile(busy, 50)),
      tenantCompletions,
      tenantShareErrorMaxPct: Math.round(
        shareErrorMaxPct(
          tenantCompletions,
          measured.map((t) => weightOf(t, tenants)),
        ),
      ),
      budgetOvershootMaxTokens: overshoot,
      budgetedDoneBeforeRaise,
      budgetedDoneAfterRaise: mine.filter((id) => doneAt.has(id)).length,
      budgetedThreads: mine.length,
    };
  } finally {
    await worker.shutdown();
    await running;
    await provider.close();
    await server.stop();
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

const strip = ({ accepted: _a, callMs: _c, ...run }: GovernedRun & { accepted: number; callMs: number }) => run;

/** Per provider (the sliding window, then the token bucket), both runs: without limits first, then with them. */
export async function governedPhase(cfg: GovernedConfig, say: (s: string) => void = () => undefined) {
  const providers: GovernedProvider[] = [];
  for (const algorithm of ['sliding-window', 'token-bucket'] as const) {
    const off = await runOnce(cfg, algorithm, false, say);
    const on = await runOnce(cfg, algorithm, true, say);
    providers.push({
      algorithm,
      off: strip(off),
      on: strip(on),
      allowedDrainMs: Math.round(allowedDrainMs(algorithm, cfg.rpm, on.accepted, cfg.concurrency, on.callMs)),
    });
  }
  const sliding = providers[0]!;
  return { ...cfg, off: sliding.off, on: sliding.on, providers } satisfies GovernedResult;
}
