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
import { updateKey } from '../core/update-key';
import { inputLimitViolation, validateInputMessage } from '../core/validate';
import { type DeliverOptions, deliverUpdate, HANDLER_DOCS } from './definitions';
import { v07 } from './patches';
import type { HandedOverAck } from './contract';
import type { ThreadState } from './state';

export interface Acknowledgements {
  /** After a batch was prepared: settles the awaited inputs it took. `deferred`: ids held back behind the pending call. */
  settle(taken: readonly InputMessage[], dropped: readonly Dropped[], deferred: readonly InputMessage[]): void;
  /**
   * The thread closed itself: every input still awaited is answered as dropped (`closed`), since no batch will take
   * it, and the run, which waits for its open handlers before it ends, can end.
   */
  closeAll(): void;
  /**
   * Just before the run continues-as-new: which update delivered each input the next run still knows (`known`: those
   * in the dedup window it carries) or waits for, and how each was answered. Empty for a thread that took none by update.
   */
  handOver(known: ReadonlySet<string>): HandedOverAck[];
}

/** An input an update delivered: a short key of the update's id, and the answer once given. */
interface Delivery {
  by: string;
  ack?: DeliveryAck;
}

/** Registers the `deliver` update; `enqueue` is the signal handler's path into the inbox. */
export function installDeliverUpdate(
  threadId: string,
  st: ThreadState,
  enqueue: (m: InputMessage) => void,
  count: (reason: DropReason, m: InputMessage | { id?: unknown }) => void,
): Acknowledgements {
  // Each input an update delivered, by input id, with the first such update and, once given, its answer. Temporal may
  // deliver one update again to a run a continue-as-new started later, under the same id (the SDK's and the server's
  // retries of a request land on the current run; temporalio/temporal issue 6375), seconds later and after any number
  // of other inputs: that update is answered as it was, not as a second delivery of its input. Kept for as long as the
  // input itself is remembered (the dedup window), which is as long as a second delivery is told from a first at all.
  // Read totally: a run's arguments are whatever its starter sent (a hand-made `carried` must not fail every task).
  const handed = Array.isArray(st.acks) ? st.acks.filter(isHandedOver) : [];
  const deliveries = new Map<string, Delivery>(handed.map(([input, code]) => [input, decodeDelivery(code)]));
  st.acks = [];
  let open = [...deliveries.values()].filter((d) => d.ack === undefined).length;
  const answer = (d: Delivery, ack: DeliveryAck) => {
    d.ack = ack;
    open -= 1;
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
      const by = updateKey(currentUpdateInfo()?.id ?? '');
      const known = deliveries.get(m.id);
      if (known !== undefined && known.by === by) {
        // The same update again, in a later run: the same answer, once its input is taken. Its client may retry again.
        await condition(() => known.ack !== undefined);
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
        waiting = { by };
        deliveries.set(m.id, waiting);
        open += 1;
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
        // Taken at a signal only (0.12): it is no input of the conversation, so there is nothing to acknowledge.
        if (v.value.synthetic?.type === 'migrate' || v.value.synthetic?.type === 'set_agent')
          throw new Error(`a ${v.value.synthetic.type} input is sent as a signal, not delivered`);
        const limit = inputLimitViolation(raw);
        if (limit) throw new Error(limit);
      },
    },
  );
  return {
    closeAll() {
      for (const d of deliveries.values()) if (d.ack === undefined) answer(d, { accepted: false, reason: 'closed' });
    },
    handOver(known) {
      // What the next run can tell apart: an input it still waits to take, or one its dedup window remembers. Beyond
      // the window an input is taken again anyway, so its delivery need not be remembered either. Each entry is its
      // input's id (in the window already) and a dozen characters, whatever update ids the senders chose.
      const handed: HandedOverAck[] = [];
      for (const [input, d] of deliveries)
        if (d.ack === undefined || known.has(input)) handed.push([input, encodeDelivery(d)]);
      // 0.7's patch, asked only when there is something to hand over, as 0.7 asked it.
      if (handed.length > 0) v07();
      return handed;
    },
    settle(taken, dropped, deferred) {
      if (open === 0) return;
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

/**
 * `<key>` once accepted (nearly every entry of a flood, so the shortest), `<key> waiting` while the input waits,
 * `<key> deferred`, or `<key> <drop reason>`.
 */
function encodeDelivery(d: Delivery): string {
  if (d.ack === undefined) return `${d.by} waiting`;
  if (d.ack.accepted) return d.ack.deferred ? `${d.by} deferred` : d.by;
  return `${d.by} ${d.ack.reason}`;
}

const isHandedOver = (a: unknown): a is HandedOverAck =>
  Array.isArray(a) && a.length === 2 && typeof a[0] === 'string' && typeof a[1] === 'string';

function decodeDelivery(code: string): Delivery {
  const [by = '', answer] = code.split(' ');
  if (answer === undefined) return { by, ack: { accepted: true } };
  if (answer === 'waiting') return { by };
  if (answer === 'deferred') return { by, ack: { accepted: true, deferred: true } };
  return { by, ack: { accepted: false, reason: answer as DropReason } };
}

/** The id of a raw payload, read without walking it. */
function asIdOnly(raw: unknown): { id?: unknown } {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? { id: (raw as { id?: unknown }).id } : {};
}

/** The client's `{ resend: true }`, read without trusting its shape. */
function isResend(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { resend?: unknown }).resend === true;
}
