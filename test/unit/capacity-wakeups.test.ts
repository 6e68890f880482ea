/**
 * The waking half of provider limits (src/activities/capacity-wakeups.ts) over the memory store's ledger: a worker's
 * dispatcher wakes the threads a key's wake-up list holds grants for — at once when capacity is free, at the time the
 * key names when it waits for rate, and after a call of this worker ends — and tells a thread waiting for a slot in
 * its slice when one of its worker's calls ends. No timing is asserted: only who is woken, in which order, and when
 * nothing is.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { capacityWakeups } from '../../src/activities/capacity-wakeups';
import type { CapacityRequest, ProviderLimits } from '../../src/core/capacity';
import { MemoryCapacity } from '../../src/store/memory-capacity';

const ask = (limits: ProviderLimits, over: Partial<CapacityRequest> = {}): CapacityRequest => ({
  key: 'k',
  limits,
  tokens: 10,
  foreground: false,
  leaseMs: 30_000,
  leaseId: randomUUID(),
  ...over,
});

/** Resolves with the woken ids once `n` were woken. */
function wakeLog(n: number) {
  const woken: string[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  return {
    woken,
    all,
    wake: async (id: string) => {
      woken.push(id);
      if (woken.length >= n) done();
    },
  };
}

describe('capacity wake-ups', () => {
  it('wakes threads waiting for rate in the order they joined, each when the key has room for it', async () => {
    const ledger = new MemoryCapacity();
    // 600 a minute: a request each 100 ms once the bucket's first half-minute is spent.
    const limits = { rpm: 600, reserve: 0 };
    while ((await ledger.acquire(ask(limits))).granted);
    for (const id of ['t1', 't2', 't3'])
      expect(await ledger.acquire(ask(limits, { waiter: id }))).toMatchObject({ granted: false });
    const log = wakeLog(3);
    const wakeups = capacityWakeups(ledger, log.wake);
    wakeups.waiting('k', limits);
    await log.all;
    wakeups.close();
    expect(log.woken).toEqual(['t1', 't2', 't3']);
    // Each woken thread's claim takes its held grant.
    for (const id of log.woken)
      expect(await ledger.acquire(ask(limits, { waiter: id }))).toMatchObject({ granted: true });
  });

  it("wakes a thread waiting for a slot ahead of the call's end, and tells it when its worker's call ends", async () => {
    const ledger = new MemoryCapacity();
    const limits = { concurrency: 1, reserve: 0 };
    const running = ask(limits);
    expect((await ledger.acquire(running)).granted).toBe(true);
    const thread = ask(limits, { waiter: 'slow' });
    expect(await ledger.acquire(thread)).toMatchObject({ granted: false, reason: 'concurrency' });
    const log = wakeLog(1);
    const wakeups = capacityWakeups(ledger, log.wake);
    wakeups.waiting('k', limits);
    await log.all;
    // Woken while the slot is busy: its claim holds, waiting in the slice for the worker's call to end.
    expect(await ledger.acquire(thread)).toMatchObject({ granted: false, holding: true });
    const told = wakeups.nextFree('k', 60_000);
    await ledger.release('k', running.leaseId, limits, 10);
    wakeups.freed('k', limits);
    await told;
    expect(await ledger.acquire(thread)).toMatchObject({ granted: true });
    wakeups.close();
  });

  it('wakes nobody while the key has no room, and stops at close', async () => {
    const ledger = new MemoryCapacity();
    const limits = { concurrency: 1, reserve: 0 };
    expect((await ledger.acquire(ask(limits))).granted).toBe(true);
    for (const id of ['a', 'b', 'c'])
      expect(await ledger.acquire(ask(limits, { waiter: id }))).toMatchObject({ granted: false });
    const woken: string[] = [];
    const wakeups = capacityWakeups(ledger, async (id) => void woken.push(id));
    wakeups.waiting('k', limits);
    await new Promise((r) => setTimeout(r, 300));
    // One woken ahead of the busy slot; the other two wait for calls to end.
    expect(woken).toEqual(['a']);
    wakeups.close();
  });
});
