/**
 * The `governed` phase (issue 27 §3): a fleet woken at once against a provider that enforces its own limits with real
 * 429s, run twice in one process — without provider limits, and with `limits` set to the provider's. A mock
 * OpenAI-compatible server allows `rpm` requests per sliding minute and `concurrency` at once and answers `429` with
 * `Retry-After` otherwise. `threads` roots in `tenants` tenants (Temporal fairness keys: the first half of weight 1, the
 * rest of weight 2) each get one user text at the same moment, while one user-facing root does a turn every second
 * (its latency measured quiet first, then under the burst). One tenant has a token budget that covers about half its
 * threads: once every other tenant is done, the phase reads its overshoot, lifts the budget and waits for the rest of
 * its threads. Each run has its own dev server, store and provider.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
import { openAiChatDialect } from '../../test/wire/openai-chat';
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

export interface GovernedResult extends GovernedConfig {
  off: GovernedRun;
  on: GovernedRun;
}

/** Tokens a completion of the mock provider reports using. */
const USAGE = { input: 400, output: 20 };
/** Tenant t's weight: the first half 1, the rest 2. */
const weightOf = (t: number, tenants: number) => (t < tenants / 2 ? 1 : 2);
/** The tenant with a budget: the last one (weight 2, so the others' shares are measured over both weights). */
const budgetedTenant = (tenants: number) => tenants - 1;
const DRAIN_LIMIT_MS = 600_000;

/** The provider: a sliding-minute request limit and a concurrency limit, each answered with a real 429. */
async function startProvider(rpm: number, concurrency: number) {
  const stats = { requests: 0, ok: 0, limited: 0, inFlight: 0 };
  const window: number[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      for await (const _ of req) void _;
      stats.requests++;
      const now = Date.now();
      while (window.length > 0 && window[0]! <= now - 60_000) window.shift();
      const limited =
        window.length >= rpm ? Math.ceil((window[0]! + 60_000 - now) / 1000) : stats.inFlight >= concurrency ? 1 : 0;
      if (limited > 0) {
        stats.limited++;
        const e = openAiChatDialect.error(429, 'Rate limit reached. Please try again.');
        res.writeHead(429, { ...e.headers, 'retry-after': String(limited) }).end(e.body);
        return;
      }
      window.push(now);
      stats.inFlight++;
      try {
        res.writeHead(200, { 'content-type': openAiChatDialect.contentType });
        for (const frame of openAiChatDialect.frames({ text: ['done', ' here'], usage: USAGE })) {
          res.write(frame);
          await sleep(20);
        }
        res.end();
        stats.ok++;
      } finally {
        stats.inFlight--;
      }
    })().catch((e: unknown) => res.destroy(e instanceof Error ? e : new Error(String(e))));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    stats,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

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

async function runOnce(cfg: GovernedConfig, limited: boolean, say: (s: string) => void): Promise<GovernedRun> {
  const { threads, tenants, rpm, concurrency } = cfg;
  const work = mkdtempSync(join(tmpdir(), 'infinity-governed-'));
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const provider = await startProvider(rpm, concurrency);
  const store = new SqliteConversationStore(join(work, 'store.sqlite'));
  const finished = new Map<string, () => void>();
  const doneAt = new Map<string, number>();
  const limits: ProviderLimits = { key: 'governed', rpm, concurrency };
  const taskQueue = 'governed';
  const worker = await createAgentWorker({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue,
    store,
    model: modelFromSpec('openai-compatible:gpt-test', { env: { INFINITY_BASE_URL: provider.baseUrl } }),
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
    const t0 = Date.now();
    say(`${limited ? 'with' : 'without'} limits: waking ${threads} threads in ${tenants} tenants`);
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
      say(`${limited ? 'with' : 'without'} limits: ${doneAt.size - 1} of ${threads} done`);
      await sleep(1_000);
    }
    const drainMs = Math.max(...others.map((id) => doneAt.get(id) ?? Date.now())) - t0;

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

/** Both runs: without limits first, then with them. */
export async function governedPhase(cfg: GovernedConfig, say: (s: string) => void = () => undefined) {
  const off = await runOnce(cfg, false, say);
  const on = await runOnce(cfg, true, say);
  return { ...cfg, off, on } satisfies GovernedResult;
}
