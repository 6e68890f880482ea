/**
 * Acknowledged delivery (the `deliver` update): the caller learns what the thread did with its input — accepted, held
 * back, or dropped with the prepare rules' reason — instead of "signalled" for an input the thread then drops. The
 * thread's loop settles each awaited input when it takes it into a batch. Issues no commands of its own beyond the
 * update's, so threads recorded before it replay unchanged.
 */
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import { condition, currentUpdateInfo, setHandler } from '@temporalio/workflow';
import type { Dropped } from '../core/prepare';
import type { DeliveryAck, DropReason, InputMessage } from '../core/types';
import { inputLimitViolation, validateInputMessage } from '../core/validate';
import { type DeliverOptions, deliverUpdate, HANDLER_DOCS } from './definitions';
import { v07 } from './patches';
import type { HandedOverAck, ThreadState } from './state';

export interface Acknowledgements {
  /** After a batch was prepared: settles the awaited inputs it took. `deferred`: ids held back behind the pending call. */
  settle(taken: readonly InputMessage[], dropped: readonly Dropped[], deferred: readonly InputMessage[]): void;
  /**
   * The thread closed itself: every input still awaited is answered as dropped (`closed`), since no batch will take
   * it, and the run, which waits for its open handlers before it ends, can end.
   */
  closeAll(): void;
  /**
   * Just before the run continues-as-new: the deliveries the next run may be asked for again under the same update id
   * (those still waiting for their input to be taken, and the last answered). Empty for a thread that took none.
   */
  handOver(): HandedOverAck[];
}

/**
 * Answered deliveries remembered (and handed to the next run): a client's retry of one may arrive seconds, and several
 * runs, after it was answered, and a flooded thread answers hundreds a second.
 */
const ANSWERED_KEPT = 1024;
/**
 * How long after its answer (or its last repeat) a delivery is handed to the next run: longer than a client's retries
 * of one request take. A thread quiet for longer hands nothing over, and its carried state stays as it was.
 */
const REPEAT_WINDOW_MS = 120_000;

/** At most this much of the next run's arguments (characters of ids) goes to handed-over deliveries. */
const HANDED_OVER_MAX_CHARS = 128 * 1024;
/** An entry's size beyond its two ids (field names, its answer, its time), in characters of JSON. */
const HANDED_OVER_OVERHEAD_CHARS = 96;

/** The workflow clock: inside the sandbox, `Date.now()` is the time of the current workflow task. */
// eslint-disable-next-line no-restricted-properties
const workflowNow = (): number => Date.now();

/** Registers the `deliver` update; `enqueue` is the signal handler's path into the inbox. */
export function installDeliverUpdate(
  threadId: string,
  st: ThreadState,
  enqueue: (m: InputMessage) => void,
  count: (reason: DropReason, m: InputMessage | { id?: unknown }) => void,
): Acknowledgements {
  // Each input an update delivered, by input id, with the first such update's id and, once given, its answer. Temporal
  // may deliver one update again after the run that took it continued-as-new, under the same id (a client's retry of
  // its request lands on the next run; temporalio/temporal issue 6375): that update is answered as it was, not as a
  // second delivery of its input. Map order is the order of answers, so the oldest answered go first.
  const deliveries = new Map<string, HandedOverAck>(st.acks.map((a) => [a.input, a]));
  st.acks = [];
  let answered = [...deliveries.values()].filter((a) => a.ack !== undefined).length;
  /** Marks `a` answered (or asked again) now, and moves it to the end: the map's order is the order of answers. */
  const touch = (a: HandedOverAck) => {
    a.at = workflowNow();
    deliveries.delete(a.input);
    deliveries.set(a.input, a);
  };
  const answer = (a: HandedOverAck, ack: DeliveryAck) => {
    a.ack = ack;
    touch(a);
    if (++answered <= ANSWERED_KEPT) return;
    for (const [id, old] of deliveries)
      if (old.ack !== undefined) {
        deliveries.delete(id);
        answered -= 1;
        break;
      }
  };
  setHandler(
    deliverUpdate,
    async (raw: unknown, options?: DeliverOptions): Promise<DeliveryAck> => {
      // The validator below refused anything else when the update arrived; it does not run on replay, where an update
      // the checks of release 0.5 took comes back (`lenient`). Anything past both is answered, never thrown.
      const v = validateInputMessage(raw);
      const m = v.ok ? v.value : v.lenient;
      if (m === undefined) {
        count('malformed', asIdOnly(raw));
        return { accepted: false, reason: 'malformed' };
      }
      const updateId = currentUpdateInfo()?.id;
      const known = deliveries.get(m.id);
      if (known !== undefined && updateId !== undefined && known.update === updateId) {
        // The same update again, in a later run: the same answer, once its input is taken. Its client may retry again.
        await condition(() => known.ack !== undefined);
        touch(known);
        return known.ack!;
      }
      // A resend after the first attempt's run continued-as-new: the input is already queued (or done). The client's
      // own resend is no dropped input (0.6 clients say so); another delivery of the same id is.
      if (st.prep.processedInputIds.has(m.id)) {
        if (!isResend(options)) count('duplicate', m);
        return { accepted: false, reason: 'duplicate' };
      }
      // A thread that closed itself takes nothing more, and its run must not wait on this handler.
      if (st.prep.closed) {
        count('closed', m);
        return { accepted: false, reason: 'closed' };
      }
      if (!st.inbox.some((q) => q.id === m.id)) enqueue(m);
      // A second delivery while the first waits (a resend) shares the first's answer.
      let waiting = known?.ack === undefined ? known : undefined;
      if (waiting === undefined) {
        deliveries.delete(m.id);
        waiting = { input: m.id, update: updateId ?? '' };
        deliveries.set(m.id, waiting);
      }
      const mine = waiting;
      await condition(() => mine.ack !== undefined);
      return mine.ack!;
    },
    {
      // Open when the run continues-as-new: abandoned on purpose, the client asks the next run, which has the input.
      unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
      description: HANDLER_DOCS.deliver,
      // Rejected updates leave no trace in history: a malformed input costs the thread nothing.
      validator: (raw: unknown, _options?: DeliverOptions) => {
        const v = validateInputMessage(raw);
        if (!v.ok) throw new Error(v.error);
        if (v.value.threadId !== threadId)
          throw new Error(`input.threadId names '${v.value.threadId}', not this thread`);
        const limit = inputLimitViolation(raw);
        if (limit) throw new Error(limit);
      },
    },
  );
  return {
    closeAll() {
      for (const a of deliveries.values()) if (a.ack === undefined) answer(a, { accepted: false, reason: 'closed' });
    },
    handOver() {
      const since = workflowNow() - REPEAT_WINDOW_MS;
      // Waiting ones first, then the newest answered, within a size bound: ids are the senders' (update ids up to the
      // server's 1,000 characters), and the next run's arguments must stay small whatever they chose.
      const all = [...deliveries.values()];
      const open = all.filter((a) => a.ack === undefined);
      const answeredRecently = all.filter((a) => a.ack !== undefined && (a.at ?? 0) >= since);
      const kept: HandedOverAck[] = [];
      let chars = 0;
      for (const a of [...open, ...answeredRecently.reverse()]) {
        chars += a.input.length + a.update.length + HANDED_OVER_OVERHEAD_CHARS;
        if (chars > HANDED_OVER_MAX_CHARS) break;
        kept.push(a);
      }
      // Handed over oldest first, as they were kept: the next run forgets the oldest answered first.
      const handed = [...kept.filter((a) => a.ack === undefined), ...kept.filter((a) => a.ack !== undefined).reverse()];
      // Asked only when there is something to hand over: a thread with no recent acknowledged delivery records no marker.
      return handed.length > 0 && v07() ? handed : [];
    },
    settle(taken, dropped, deferred) {
      if (deliveries.size === answered) return;
      // Two copies of one id in a batch (a resend): one accepted and one dropped as a duplicate means accepted.
      const copies = new Map<string, number>();
      for (const m of taken) copies.set(m.id, (copies.get(m.id) ?? 0) + 1);
      const reasons = new Map<string, Dropped[]>();
      for (const d of dropped) reasons.set(d.id, [...(reasons.get(d.id) ?? []), d]);
      const held = new Set(deferred.map((m) => m.id));
      for (const [id, n] of copies) {
        const waiting = deliveries.get(id);
        if (waiting === undefined || waiting.ack !== undefined) continue;
        const drops = reasons.get(id) ?? [];
        answer(
          waiting,
          drops.length >= n
            ? { accepted: false, reason: drops[0]!.reason }
            : held.has(id)
              ? { accepted: true, deferred: true }
              : { accepted: true },
        );
      }
    },
  };
}

/** The id of a raw payload, read without walking it. */
function asIdOnly(raw: unknown): { id?: unknown } {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? { id: (raw as { id?: unknown }).id } : {};
}

/** The client's `{ resend: true }`, read without trusting its shape. */
function isResend(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { resend?: unknown }).resend === true;
}
