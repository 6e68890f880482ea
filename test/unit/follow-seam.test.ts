/**
 * The seam between the history a follower read and the live events it subscribed to before reading (client/follow.ts):
 * each way a slice can fall relative to the read, and workers that do not say where their slices stand.
 */
import { describe, expect, it } from 'vitest';
import { FollowSeam, type SeamStep } from '../../src/client/follow';
import type { LiveEvent } from '../../src/events/live-events';

const T = 't';
const running: LiveEvent = { threadId: T, type: 'status', status: 'running' };
const idle: LiveEvent = { threadId: T, type: 'status', status: 'idle' };
const result = (id: string): LiveEvent => ({ threadId: T, type: 'tool_result', toolCallId: id, text: `r${id}` });
const started = (at?: number): LiveEvent => ({
  threadId: T,
  type: 'completion_started',
  sliceId: `s${at}`,
  ...(at !== undefined && { at }),
});
const delta = (text: string): LiveEvent => ({ threadId: T, type: 'text_delta', text });
const finished = (length?: number): LiveEvent => ({
  threadId: T,
  type: 'completion_finished',
  sliceId: 's',
  ...(length !== undefined && { length }),
});

/** Runs events through a seam; a catch-up shows as `catchUp:<to>` and reaches `to` (or `end`). */
function run(seam: FollowSeam, events: LiveEvent[], end = 99): string[] {
  const out: string[] = [];
  const show = (step: SeamStep) => {
    if ('show' in step) {
      const e = step.show;
      out.push(e.type === 'status' ? e.status : e.type === 'text_delta' ? e.text : e.type);
      return;
    }
    out.push(`catchUp:${step.catchUp ?? 'end'}`);
    seam.caughtUp(step.catchUp ?? end);
  };
  for (const e of events) seam.take(e).forEach(show);
  return out;
}

describe('follow seam', () => {
  it('shows a slice that builds on what was read, inputs first', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [running, result('1'), started(3), delta('hi'), finished(5), idle])).toEqual([
      'running',
      'tool_result',
      'completion_started',
      'hi',
      'completion_finished',
      'idle',
    ]);
    expect(seam.shown).toBe(5);
  });

  it('drops a slice the history read already holds, and shows what follows it', () => {
    const seam = new FollowSeam(5);
    expect(run(seam, [running, result('1'), started(3), delta('hi'), finished(5), idle])).toEqual(['idle']);
    expect(run(seam, [running, started(5), delta('next'), finished(6)])).toEqual([
      'running',
      'completion_started',
      'next',
      'completion_finished',
    ]);
  });

  it('reads from the store what committed without live events before a slice (a rewind)', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [running, started(5), finished(6)])).toEqual([
      'catchUp:5',
      'running',
      'completion_started',
      'completion_finished',
    ]);
    expect(seam.shown).toBe(6);
  });

  it('drops a slice seen without its start and reads it from the store once it ends', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [delta('lost start'), { threadId: T, type: 'tool_call', id: 'c', name: 'x', args: {} }])).toEqual(
      [],
    );
    expect(run(seam, [finished(6), idle])).toEqual(['catchUp:6', 'idle']);
    // An input seen mid-slice is no slice start either.
    const other = new FollowSeam(3);
    expect(run(other, [result('9'), delta('x'), finished(7)])).toEqual(['catchUp:7']);
  });

  it('after lost events, reads the store first, then says so', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [running, started(3), delta('a'), { threadId: T, type: 'replay_gap' }], 8)).toEqual([
      'running',
      'completion_started',
      'a',
      'catchUp:end',
      'replay_gap',
    ]);
    expect(seam.shown).toBe(8);
  });

  it('a slice whose attempt died is shown again as its retry runs it', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [running, started(3), delta('first try'), running, started(3), delta('retry')])).toEqual([
      'running',
      'completion_started',
      'first try',
      'running',
      'completion_started',
      'retry',
    ]);
  });

  it('passes through what a worker of 0.11 or earlier sends (inputs before running, no positions)', () => {
    const seam = new FollowSeam(3);
    expect(run(seam, [result('1'), running, started(), delta('old'), finished(), idle])).toEqual([
      'tool_result',
      'running',
      'completion_started',
      'old',
      'completion_finished',
      'idle',
    ]);
    expect(seam.shown).toBe(3);
  });

  it('shows events outside slices as they come', () => {
    const seam = new FollowSeam(0);
    const info: LiveEvent = { threadId: T, type: 'info', text: 'note' };
    expect(run(seam, [info, idle])).toEqual(['info', 'idle']);
  });
});
