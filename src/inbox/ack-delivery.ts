/**
 * Acknowledged delivery: the input goes in through the thread's `deliver` update, which answers once the thread has
 * taken it into a batch — accepted (or held back behind the pending call) or dropped with its reason — instead of
 * "signalled" for an input the thread then drops. Needs a worker to answer; a worker of a release without the update
 * gets the input by signal instead (`acknowledged: false`).
 */
import {
  type Client,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { DeliveryAck } from '../core/types';
import { deliverUpdate } from '../workflows/definitions';
import { type DeliveryResult, deliverInput, prepareInput } from './deliver';
import { InvalidInputError, ThreadNotFoundError } from './errors';
import { discardPrepared, type InputLimits } from './staging';
import { isWorkflowTaskFailing } from './unavailable';

/** A worker of a release without the `deliver` update (the SDK's rejection text). */
const NO_HANDLER = /no registered handler for update/i;
/** The run ended (continued-as-new) after accepting the update and before answering it: the next run has the input. */
const RUN_ENDED = /completed before the update completed|continued.as.new/i;

/** Update attempts while the thread's workflow task is failing (≈ 6 s of backoff) before the input goes by signal. */
const TASK_FAILING_ATTEMPTS = 7;

/** Validates, stages if large, and delivers with acknowledgement. */
export async function deliverAcknowledged(
  client: Client,
  message: unknown,
  limits: InputLimits = {},
): Promise<DeliveryResult> {
  const prepared = await prepareInput(message, limits);
  const msg = prepared.message;
  const handle = client.workflow.getHandle(msg.threadId);
  let result: DeliveryResult | undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      let ack: DeliveryAck;
      try {
        ack = await handle.executeUpdate(deliverUpdate, { args: attempt > 0 ? [msg, { resend: true }] : [msg] });
      } catch (e) {
        if (e instanceof WorkflowNotFoundError) {
          try {
            await handle.describe();
          } catch (d) {
            if (d instanceof WorkflowNotFoundError) throw new ThreadNotFoundError(msg.threadId);
            throw d;
          }
          return (result = { delivered: false, reason: 'closed' });
        }
        if (e instanceof WorkflowUpdateFailedError) {
          const why = e.cause?.message ?? e.message;
          if (NO_HANDLER.test(why)) {
            const signalled = await deliverInput(client, msg, limits);
            return (result = signalled.delivered ? { ...signalled, acknowledged: false } : signalled);
          }
          // Otherwise the validator refused it: nothing reached the thread.
          if (!RUN_ENDED.test(why)) throw new InvalidInputError(why);
        } else if (isWorkflowTaskFailing(e)) {
          // The server refuses updates until the task's next attempt succeeds (a task timed out on a loaded worker, or
          // a bug). A signal is stored whatever the task does: the input is kept, only its acknowledgement is lost.
          if (attempt + 1 >= TASK_FAILING_ATTEMPTS) {
            const signalled = await deliverInput(client, msg, limits);
            return (result = signalled.delivered ? { ...signalled, acknowledged: false } : signalled);
          }
          await new Promise((r) => setTimeout(r, Math.min(1_000, 100 * 2 ** attempt)));
          continue;
        } else if (!(e instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) {
          throw e;
        }
        // The run continued-as-new before it took the input (the next run has it queued), or a long poll ended: ask
        // again. The next run answers for the same input.
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      // A resend's `duplicate`: the first attempt's input was queued and is the one the thread took.
      if (!ack.accepted && ack.reason === 'duplicate' && attempt > 0)
        return (result = { delivered: true, acknowledged: true });
      return (result = ack.accepted
        ? { delivered: true, acknowledged: true, ...(ack.deferred && { deferred: true }) }
        : { delivered: false, reason: ack.reason });
    }
  } finally {
    if (result?.delivered !== true) await discardPrepared(prepared, limits.store);
  }
}
