/**
 * Provider limits in each store (issue 27 §2): two store instances on one SQLite file, and two on one PostgreSQL
 * schema, stand for two workers; they share one allowance. Leases end when released or when they expire (a killed
 * worker's), a rate-limit answer written through one closes the key for the other, and the correction after a call
 * charges what it used beyond its estimate. The memory store holds the same within one instance.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CapacityRequest, type ProviderLimits, RELEASE_SETTLE_MS } from '../src/core/capacity';
import type { ConversationStore } from '../src/store/conversation-store';
import { InMemoryConversationStore } from '../src/store/memory';
import { PostgresConversationStore } from '../src/store/postgres';
import { SqliteConversationStore } from '../src/store/sqlite';
import { createTestDatabase } from './postgres';

const dir = mkdtempSync(join(tmpdir(), 'capacity-'));
let database: Promise<string> | undefined;
let schemas = 0;
const opened: ConversationStore[] = [];

/** Two workers' views of one store. */
type Pair = () => Promise<[ConversationStore, ConversationStore]>;

const pairs: Record<string, Pair> = {
  memory: async () => {
    const s = new InMemoryConversationStore();
    return [s, s];
  },
  sqlite: async () => {
    const file = join(dir, `${randomUUID()}.sqlite`);
    return [new SqliteConversationStore(file), new SqliteConversationStore(file)];
  },
  postgres: async () => {
    const connectionString = await (database ??= createTestDatabase('capacity'));
    const schema = `capacity_${++schemas}`;
    // Not migrated here: the first capacity call must migrate, as every other method of the store does.
    return [
      new PostgresConversationStore({ connectionString, schema }),
      new PostgresConversationStore({ connectionString, schema }),
    ];
  },
};

afterAll(async () => {
  for (const s of opened) await s.close();
});

/** A released slot is free once it has settled (RELEASE_SETTLE_MS: the provider closing the request). */
const settle = () => new Promise((r) => setTimeout(r, RELEASE_SETTLE_MS + 10));

const ask = (limits: ProviderLimits, over: Partial<CapacityRequest> = {}): CapacityRequest => ({
  key: 'openai:gpt-test',
  limits,
  tokens: 100,
  foreground: true,
  leaseMs: 30_000,
  leaseId: randomUUID(),
  ...over,
});

for (const [name, pair] of Object.entries(pairs)) {
  describe(name, () => {
    const open = async () => {
      const both = await pair();
      opened.push(...both);
      return both;
    };

    it('grants as many leases at once as the concurrency allows, across both, and a release frees one', async () => {
      const [a, b] = await open();
      const limits = { concurrency: 3, reserve: 0 };
      const requests = Array.from({ length: 12 }, () => ask(limits));
      const grants = await Promise.all(requests.map((r, i) => (i % 2 ? a : b).capacity.acquire(r)));
      const granted = requests.filter((_, i) => grants[i]!.granted);
      expect(granted).toHaveLength(3);
      expect(grants.filter((g) => !g.granted)).toEqual(
        Array(9).fill({ granted: false, reason: 'concurrency', retryAfterMs: 500 }),
      );
      await b.capacity.release(granted[0]!.key, granted[0]!.leaseId, limits, 100);
      // Not at once: the slot settles first.
      expect((await a.capacity.acquire(ask(limits))).granted).toBe(false);
      await settle();
      expect((await a.capacity.acquire(ask(limits))).granted).toBe(true);
      expect((await b.capacity.acquire(ask(limits))).granted).toBe(false);
    });

    it("gives an expired lease's capacity back (a worker killed while it held it)", async () => {
      const [a, b] = await open();
      const limits = { concurrency: 1, reserve: 0 };
      const held = ask(limits, { leaseMs: 300 });
      expect((await a.capacity.acquire(held)).granted).toBe(true);
      expect((await b.capacity.acquire(ask(limits))).granted).toBe(false);
      // A renewal keeps it; then, unrenewed, it ends.
      await new Promise((r) => setTimeout(r, 200));
      await a.capacity.renew(held.key, held.leaseId, 300);
      await new Promise((r) => setTimeout(r, 200));
      expect((await b.capacity.acquire(ask(limits))).granted).toBe(false);
      await new Promise((r) => setTimeout(r, 250));
      expect((await b.capacity.acquire(ask(limits))).granted).toBe(true);
    });

    it("closes the key for every worker when one hears the provider's rate-limit answer", async () => {
      const [a, b] = await open();
      const limits = { rpm: 600, reserve: 0 };
      expect((await b.capacity.acquire(ask(limits))).granted).toBe(true);
      await a.capacity.backoff('openai:gpt-test', limits, 1_000);
      const refused = await b.capacity.acquire(ask(limits));
      expect(refused).toMatchObject({ granted: false, reason: 'backoff' });
      expect(refused.granted === false && refused.retryAfterMs).toBeGreaterThan(500);
      expect(refused.granted === false && refused.retryAfterMs).toBeLessThanOrEqual(1_000);
      // Another key is not concerned.
      expect((await b.capacity.acquire(ask(limits, { key: 'other' }))).granted).toBe(true);
      await new Promise((r) => setTimeout(r, 1_050));
      expect((await a.capacity.acquire(ask(limits))).granted).toBe(true);
    });

    it("learns the provider's reported room through one worker, for the other", async () => {
      const [a, b] = await open();
      const limits = { rpm: 600, reserve: 0 };
      const first = ask(limits);
      const grant = await a.capacity.acquire(first);
      const ticket = grant.granted ? grant.ticket : undefined;
      expect(ticket).toMatchObject({ cuts: 0, requests: 1 });
      // The provider had 2 left after this request: the key's minute is 3 requests now, whichever worker asks, and
      // its bucket holds half of that (300 of 600 before). No limit reported: no other application's use to keep a
      // margin from (a limit of 600 with 2 left would say another used 597, and a tenth of that closes the key).
      await a.capacity.release(first.key, first.leaseId, limits, undefined, {
        ticket,
        report: { requests: { remaining: 2 } },
      });
      const more = [];
      for (let i = 0; i < 4; i++) more.push((await (i % 2 ? a : b).capacity.acquire(ask(limits))).granted);
      expect(more).toEqual([true, false, false, false]);
    });

    it("keeps a refused thread on the key's wake-up list: one worker's dispatch holds a grant for it, its claim takes it", async () => {
      const [a, b] = await open();
      const limits = { concurrency: 1, reserve: 0 };
      const running = ask(limits, { foreground: false });
      expect((await a.capacity.acquire(running)).granted).toBe(true);
      const thread = ask(limits, { foreground: false, waiter: 'thread-1' });
      const refused = await a.capacity.acquire(thread);
      expect(refused).toMatchObject({ granted: false, reason: 'concurrency' });
      expect(refused.granted === false && refused.fallbackMs).toBeGreaterThan(0);
      // Two workers dispatch at once: the thread is woken once, ahead of the busy slot; only a call's end frees it, so
      // the dispatch names no time to come back.
      const both = await Promise.all([
        a.capacity.dispatch!(thread.key, limits),
        b.capacity.dispatch!(thread.key, limits),
      ]);
      expect(both.flatMap((d) => d.woken)).toEqual(['thread-1']);
      expect(both.every((d) => d.againInMs === undefined)).toBe(true);
      // It asks while the call runs: it keeps its grant and is told to ask again from within its slice.
      expect(await b.capacity.acquire(thread)).toMatchObject({ granted: false, reason: 'concurrency', holding: true });
      await a.capacity.release(running.key, running.leaseId, limits, 100);
      await settle();
      // The slot is its grant's: another request finds the key full, the woken thread's claim takes it.
      expect((await a.capacity.acquire(ask(limits, { foreground: false }))).granted).toBe(false);
      expect(await b.capacity.acquire(thread)).toMatchObject({ granted: true });
      expect((await a.capacity.acquire(ask(limits, { foreground: false }))).granted).toBe(false);
      // Releasing its lease frees the key.
      await b.capacity.release(thread.key, thread.leaseId, limits, 100);
      await settle();
      expect((await a.capacity.acquire(ask(limits, { foreground: false }))).granted).toBe(true);
    });

    it('gives a held grant back when the woken thread will not use it', async () => {
      const [a, b] = await open();
      const limits = { concurrency: 1, reserve: 0 };
      const thread = ask(limits, { foreground: false, waiter: 'thread-2' });
      const running = ask(limits, { foreground: false });
      expect((await a.capacity.acquire(running)).granted).toBe(true);
      expect((await a.capacity.acquire(thread)).granted).toBe(false);
      await a.capacity.release(running.key, running.leaseId, limits, 100);
      await settle();
      expect((await b.capacity.dispatch!(thread.key, limits)).woken).toEqual(['thread-2']);
      expect((await a.capacity.acquire(ask(limits, { foreground: false }))).granted).toBe(false);
      // Its slice ended before its request (over budget, say): the grant is given back through either worker.
      await b.capacity.release(thread.key, 'held:thread-2', limits, undefined);
      expect((await a.capacity.acquire(ask(limits, { foreground: false }))).granted).toBe(true);
    });

    it('charges a call what it used beyond its estimate', async () => {
      const [a, b] = await open();
      const limits = { tpm: 1_000, reserve: 0 };
      const first = ask(limits, { tokens: 400 });
      expect((await a.capacity.acquire(first)).granted).toBe(true);
      await a.capacity.release(first.key, first.leaseId, limits, 950);
      // 50 tokens left (and a few refilled since): 400 more must wait about 21 s.
      const refused = await b.capacity.acquire(ask(limits, { tokens: 400 }));
      expect(refused).toMatchObject({ granted: false, reason: 'tokens' });
      expect(refused.granted === false && refused.retryAfterMs).toBeGreaterThan(15_000);
    });
  });
}
