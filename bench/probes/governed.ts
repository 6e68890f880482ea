/**
 * `npx tsx bench/probes/governed.ts [threads] [rpm] [concurrency]`: a fleet woken at once against a provider that
 * enforces its own limits with real 429s (issue 27 §3, a first cut of the `governed` phase). A mock OpenAI-compatible
 * server allows `rpm` requests per sliding minute and `concurrency` at once, answering `429` with `Retry-After`
 * otherwise. `threads` roots (default 200) in 10 tenants (Temporal fairness keys; five of weight 1, five of weight 2)
 * each get one user text at the same moment, while one user-facing root does a turn every second; its latency is
 * measured quiet first (idle p50), then under the burst. Run twice in one process: without provider limits, and with
 * `limits` set to the provider's. Prints JSON: `{ off, on }` each with provider429s, providerRequests, completions,
 * drainMs, userIdleP50Ms, userP50Ms, tenantCompletions (while every tenant still had threads waiting) and
 * tenantShareErrorMaxPct (the largest deviation of a tenant's share of those completions from its weight's share).
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import type { ProviderLimits } from '../../src/core/capacity';
import { startDevServer } from '../../src/devserver/server';
import { modelFromSpec } from '../../src/model/registry';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { createAgentWorker } from '../../src/worker/create-worker';
import { openAiChatDialect } from '../../test/wire/openai-chat';
import { runMain } from '../lib/main';
import { percentile } from '../lib/stats';

const TENANTS = 10;
/** Tenant t's weight: the first half 1, the second half 2. */
const weightOf = (t: number) => (t < TENANTS / 2 ? 1 : 2);

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
        for (const frame of openAiChatDialect.frames({ text: ['done', ' here'], usage: { input: 400, output: 20 } })) {
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

interface Outcome {
  provider429s: number;
  providerRequests: number;
  completions: number;
  drainMs: number;
  userIdleP50Ms: number;
  userP50Ms: number;
  tenantCompletions: number[];
  tenantShareErrorMaxPct: number;
}

async function runOnce(threads: number, rpm: number, concurrency: number, limited: boolean): Promise<Outcome> {
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
    const requestsBefore = provider.stats.requests;
    const limitedBefore = provider.stats.limited;
    const t0 = Date.now();
    const ids = await Promise.all(
      Array.from({ length: threads }, async (_, i) => {
        const threadId = `fleet-${limited}-${i}-${Date.now()}`;
        const t = i % TENANTS;
        await client.startThread({
          threadId,
          tenant: `tenant-${t}`,
          priority: { fairnessKey: `tenant-${t}`, fairnessWeight: weightOf(t) },
        });
        await client.thread(threadId).sendUserText(`wake ${i}`);
        return threadId;
      }),
    );
    const busy: number[] = [];
    let turns = 5;
    while (ids.some((id) => !doneAt.has(id))) {
      busy.push(await turn(turns++));
      await sleep(1_000);
      if (Date.now() - t0 > 600_000) break;
    }
    const drainMs = Math.max(...ids.map((id) => doneAt.get(id) ?? Date.now())) - t0;
    // While every tenant still has threads waiting: until the first tenant's last completion.
    const tenantOf = (i: number) => i % TENANTS;
    const lastOf = Array.from({ length: TENANTS }, (_, t) =>
      Math.max(...ids.filter((_, i) => tenantOf(i) === t).map((id) => doneAt.get(id) ?? Infinity)),
    );
    const backlogged = Math.min(...lastOf);
    const tenantCompletions = Array.from(
      { length: TENANTS },
      (_, t) => ids.filter((id, i) => tenantOf(i) === t && (doneAt.get(id) ?? Infinity) <= backlogged).length,
    );
    const total = tenantCompletions.reduce((a, b) => a + b, 0);
    const weights = Array.from({ length: TENANTS }, (_, t) => weightOf(t));
    const weightSum = weights.reduce((a, b) => a + b, 0);
    const tenantShareErrorMaxPct = Math.round(
      Math.max(
        ...tenantCompletions.map((n, t) => {
          const expected = (total * weights[t]!) / weightSum;
          return (100 * Math.abs(n - expected)) / expected;
        }),
      ),
    );
    return {
      provider429s: provider.stats.limited - limitedBefore,
      providerRequests: provider.stats.requests - requestsBefore,
      completions: ids.filter((id) => doneAt.has(id)).length,
      drainMs,
      userIdleP50Ms: Math.round(percentile(idle, 50)),
      userP50Ms: Math.round(percentile(busy, 50)),
      tenantCompletions,
      tenantShareErrorMaxPct,
    };
  } finally {
    await worker.shutdown();
    await running;
    await provider.close();
    await server.stop();
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const threads = Number(process.argv[2] ?? 200);
  const rpm = Number(process.argv[3] ?? 600);
  const concurrency = Number(process.argv[4] ?? 8);
  const off = await runOnce(threads, rpm, concurrency, false);
  const on = await runOnce(threads, rpm, concurrency, true);
  console.log(JSON.stringify({ threads, rpm, concurrency, off, on }, null, 2));
}

runMain(main);
