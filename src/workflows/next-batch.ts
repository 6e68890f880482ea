/**
 * Taking the next batch off the thread's queue and turning it into what a slice commits (docs/semantics.md §2–§8).
 * Only the synchronous steps live here: the loop awaits the control inputs and the event children between them
 * itself, so every command and every `patched()` call comes at the same point of the run, and in the same microtask
 * order, as when the loop was one function (other handlers' continuations interleave with the loop's by microtask).
 */
import { upsertMemo, upsertSearchAttributes, uuid4, workflowInfo } from '@temporalio/workflow';
import { takeBatch } from '../core/batching';
import { applyDeferral, type Dropped, prepareBatch, splitInterruptBatch, type PrepareOutcome } from '../core/prepare';
import type { SliceInputs, SlicePeek } from '../core/slice-protocol';
import type { DropReason, InputMessage, StoredItem } from '../core/types';
import type { Acknowledgements } from './acknowledged';
import { searchAttributes } from './definitions';
import { dropStalePrompts, type LoopState } from './loop-state';
import { v02, v03, v05, v06 } from './patches';
import type { SliceRunner } from './slice-runner';
import type { ThreadOptions } from './contract';
import type { ThreadState } from './state';
import { titleOf } from './ui-text';

/** A batch taken off the queue, and the history length its event and compaction children inherit. */
export interface TakenBatch {
  batch: InputMessage[];
  safePoint: number;
  /**
   * 0.6: a local slice's batch of several inputs, to be cut to what an earlier attempt of this workflow task committed
   * (`keepCommittedInputs`) before anything else reads it.
   */
  several?: true;
  /** 0.6: the batch must run as a regular activity, not locally (its first input is not yet in history). */
  remote?: true;
}

/**
 * Starts a turn of the loop once it has work: clears the block, marks the loop busy and notes whether this slice
 * retries a carried one. Returns whether the slice may run as a local activity. Asks `v02()` then `v03()`, on every
 * turn, as the loop always did: the first of them is where most runs ask 0.11's patch (patches.ts).
 */
export function beginTurn(st: ThreadState, loop: LoopState, slices: SliceRunner): boolean {
  loop.blockedAt = undefined;
  v02();
  loop.acting = true;
  loop.retrying = st.carry.length > 0;
  // 0.3 (decision 50): only the first slice of a workflow task may run locally, so a task that fails after it leaves
  // at most one slice committed that its history does not show, and that slice's inputs are the queue's first only:
  // every attempt of the task starts from the same state and queue head, so it asks for the same slice again.
  v03();
  return slices.localEnabled && workflowInfo().historyLength !== loop.lastLocalTask;
}

/**
 * Takes the next batch off the queue (nothing carried): bounded, ended before the input after an interrupting user
 * text, and for a local slice the inputs a retry of this task is sure to take too. Asks `v02()` once.
 */
export function nextBatch(st: ThreadState, loop: LoopState, local: boolean): TakenBatch {
  // 0.2: a bounded batch, so a flood never builds an activity input Temporal refuses; what waits stays first.
  v02();
  let batch = takeBatch(st.inbox);
  // A rewind queued (issue 28 §2) keeps the queue's order: a user text behind it, which interrupted the running slice,
  // is taken after the rewind, not ahead of it as an interrupting text would be.
  if (loop.interruptNext && batch.some(isRewind)) loop.interruptNext = false;
  if (loop.interruptNext) {
    const split = splitInterruptBatch(batch);
    batch = split.batch;
    st.inbox.unshift(...split.rest);
    loop.interruptNext = false;
  }
  // A rewind (issue 28 §2) is a batch of its own: what came before it is committed first, what comes after is taken
  // once the history is rewound (its safe point, for children and compaction, is the rewound one).
  const rewind = batch.findIndex(isRewind);
  if (rewind >= 0) st.inbox.unshift(...batch.splice(rewind === 0 ? 1 : rewind));
  // 0.6 (decision 67): a local slice takes every input a retry of this task is sure to find in the same place — all but
  // those a `deliver` update admitted in this very task, which are in no history until the task completes (a retry may
  // see them elsewhere in the queue, or not at all) — once the store says what an earlier attempt of this task
  // committed (`keepCommittedInputs`). A batch that starts with such an input runs as a regular activity, whose input
  // is recorded.
  let several: true | undefined;
  let remote: true | undefined;
  const unsettledHead = batch.length > 0 && admittedNow(loop, batch[0]!);
  if (local && (batch.length > 1 || unsettledHead)) {
    v06();
    if (unsettledHead) remote = true;
    else {
      const settled = batch.findIndex((m) => admittedNow(loop, m));
      if (settled > 0) st.inbox.unshift(...batch.splice(settled));
      if (batch.length > 1) several = true;
    }
  }
  // Event and compaction children inherit the committed history, without a trailing unanswered call.
  const safePoint =
    st.prep.pendingCall && !st.prep.processedToolCalls.has(st.prep.pendingCall.id) ? st.length - 1 : st.length;
  return { batch, safePoint, ...(several && { several }), ...(remote && { remote }) };
}

const isRewind = (m: InputMessage): boolean => m.synthetic?.type === 'rewind';

/** An input a `deliver` update admitted in this workflow task (decision 67). */
const admittedNow = (loop: LoopState, m: InputMessage): boolean =>
  loop.admittedByUpdate.get(m.id) === workflowInfo().historyLength;

/**
 * 0.6 (decision 67): cuts a local slice's batch of several inputs to what an earlier attempt of this workflow task
 * committed under the same slice id (the store's answer, `peek`), and puts the rest back at the head of the queue.
 * Every attempt of the task starts from the same state and the queue only grows at its end, so what an attempt took
 * is a prefix of what the next one finds. A slice committed by 0.5 code took one input; an answer that does not fit
 * the queue, or no answer, falls back to 0.3's one input, which the slice's own check guards (decision 50).
 * Returns which inputs the slice takes, for it to record with its commit.
 */
export function keepCommittedInputs(st: ThreadState, batch: InputMessage[], peek: SlicePeek | undefined): SliceInputs {
  let count = batch.length;
  if (peek === undefined) count = 1;
  else if (peek.committed) {
    const c = peek.inputs?.count ?? 1;
    const fits = peek.inputs === undefined || (c >= 1 && c <= batch.length && batch[c - 1]!.id === peek.inputs.lastId);
    count = fits ? c : 1;
  }
  if (count < batch.length) st.inbox.unshift(...batch.splice(count));
  return { count, lastId: batch[count - 1]!.id };
}

/**
 * Applies the prepare rules to what is left of `taken` after its control inputs (`rest`): counts what they drop and
 * settles the acknowledged deliveries the batch took. The event children it asks for are the loop's to start.
 */
export function prepareTaken(
  st: ThreadState,
  taken: readonly InputMessage[],
  rest: readonly InputMessage[],
  count: (reason: DropReason, m: InputMessage | { id?: unknown }) => void,
  acks: Acknowledgements,
  controlDrops: readonly Dropped[] = [],
): PrepareOutcome {
  const prep = prepareBatch(st.prep, applyDeferral(st.prep, rest), uuid4);
  dropStalePrompts(st);
  const byId = prep.dropped.length > 0 ? new Map(taken.map((m) => [m.id, m])) : undefined;
  for (const d of prep.dropped) count(d.reason, byId?.get(d.id) ?? { id: d.id });
  acks.settle(taken, [...controlDrops, ...prep.dropped], st.prep.deferred);
  return prep;
}

/**
 * What the slice of a ready batch commits: the seed's prefix (first slice only), then the accepted items. Titles the
 * thread from its first user text.
 */
export function sliceAppend(opts: ThreadOptions, st: ThreadState, prep: PrepareOutcome): StoredItem[] {
  const append = [...st.prefix.splice(0), ...prep.append];
  maybeTitle(opts, append);
  return append;
}

/** The thread's title in its memo, from the first user text (children get theirs when they start). */
function maybeTitle(opts: ThreadOptions, append: StoredItem[]): void {
  // upsertMemo updates workflowInfo().memo too: one title per thread, across continue-as-new.
  if (workflowInfo().memo?.title !== undefined) return;
  const first = append.find((s) => s.item.kind === 'user');
  if (first?.item.kind !== 'user') return;
  const title = titleOf(first.item.text);
  upsertMemo({ title });
  // 0.5, asked only for threads that write titles (decision 62): the UI's `Title` column, once per thread.
  if (opts.titleSearchAttribute) {
    v05();
    upsertSearchAttributes([{ key: searchAttributes.Title, value: title }]);
  }
}
