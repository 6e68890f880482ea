/**
 * Decision 67 without a server: what a local slice of several queued inputs takes when an earlier attempt of its
 * workflow task committed (`keepCommittedInputs`), and that a job handed off by its local activity commits only once
 * an activity adopts it (`SliceJob.commitGate`).
 */
import { describe, expect, it } from 'vitest';
import { SliceJobs } from '../../src/activities/slice-jobs';
import type { SliceResult } from '../../src/core/slice-protocol';
import type { InputMessage } from '../../src/core/types';
import { keepCommittedInputs } from '../../src/workflows/next-batch';
import type { ThreadState } from '../../src/workflows/state';

const input = (id: string): InputMessage => ({ id, threadId: 't', content: { type: 'text', text: id } });

function taken(n: number, queued: string[] = []) {
  const st = { inbox: queued.map(input) } as unknown as ThreadState;
  const batch = Array.from({ length: n }, (_, i) => input(`m${i + 1}`));
  return { st, batch };
}

describe('keepCommittedInputs', () => {
  it('takes the whole batch when the slice has not committed', () => {
    const { st, batch } = taken(3, ['later']);
    expect(keepCommittedInputs(st, batch, { committed: false })).toEqual({ count: 3, lastId: 'm3' });
    expect(batch.map((m) => m.id)).toEqual(['m1', 'm2', 'm3']);
    expect(st.inbox.map((m) => m.id)).toEqual(['later']);
  });

  it('takes what an earlier attempt committed and puts the rest back first', () => {
    const { st, batch } = taken(4, ['later']);
    expect(keepCommittedInputs(st, batch, { committed: true, inputs: { count: 2, lastId: 'm2' } })).toEqual({
      count: 2,
      lastId: 'm2',
    });
    expect(batch.map((m) => m.id)).toEqual(['m1', 'm2']);
    expect(st.inbox.map((m) => m.id)).toEqual(['m3', 'm4', 'later']);
  });

  it("reads a slice committed without its inputs (release 0.5's local slice) as the first input", () => {
    const { st, batch } = taken(3);
    expect(keepCommittedInputs(st, batch, { committed: true })).toEqual({ count: 1, lastId: 'm1' });
    expect(st.inbox.map((m) => m.id)).toEqual(['m2', 'm3']);
  });

  it('falls back to the first input when the answer does not fit the queue, or there is none', () => {
    for (const peek of [
      { committed: true as const, inputs: { count: 2, lastId: 'other' } },
      { committed: true as const, inputs: { count: 9, lastId: 'm9' } },
      undefined,
    ]) {
      const { st, batch } = taken(3);
      expect(keepCommittedInputs(st, batch, peek)).toEqual({ count: 1, lastId: 'm1' });
      expect(st.inbox).toHaveLength(2);
    }
  });
});

describe('a handed-off slice job', () => {
  const result = { sliceId: 's' } as SliceResult;

  /** A job that stops at its commit gate and records whether it passed. */
  function gatedJob(jobs: SliceJobs) {
    let release!: () => void;
    const reached = new Promise<void>((r) => (release = r));
    const committed: string[] = [];
    const job = jobs.start('k', async (control) => {
      await reached;
      await control.commitGate?.();
      committed.push('commit');
      return result;
    });
    return { job, release, committed };
  }

  it('commits only once an activity adopts it', async () => {
    const jobs = new SliceJobs(60_000);
    const { job, release, committed } = gatedJob(jobs);
    expect(job.tryHandOff()).toBe(true);
    jobs.park(job);
    release();
    await new Promise((r) => setTimeout(r, 20));
    expect(committed).toEqual([]);
    expect(jobs.adopt('k')).toBe(job);
    await expect(job.promise).resolves.toBe(result);
    expect(committed).toEqual(['commit']);
  });

  it('commits nothing when nobody adopts it', async () => {
    const jobs = new SliceJobs(30);
    const { job, release, committed } = gatedJob(jobs);
    job.tryHandOff();
    jobs.park(job);
    release();
    await expect(job.promise).rejects.toThrow(/abandoned before an activity adopted it/);
    expect(committed).toEqual([]);
  });

  it('is not handed off once it has begun to commit', async () => {
    const jobs = new SliceJobs();
    const { job, release } = gatedJob(jobs);
    release();
    await job.promise;
    expect(job.tryHandOff()).toBe(false);
  });
});
