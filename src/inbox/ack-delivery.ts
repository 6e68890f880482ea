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
import { isUpdateLimit, isUpdateLostWithTask, isWorkflowTaskFailing } from './unavailable';

/** A worker of a release without the `deliver` update (the SDK's rejection text). */
const NO_HANDLER = /no registered handler for update/i;
/**
 * The server dropped the update before the workflow saw it (its workflow task ended without taking it, e.g. under a
 * burst of updates): nothing reached the thread, the same input may be sent again.
 */
const NOT_PROCESSED = /wasn't processed by worker|was not processed by worker/i;
/** The run ended (continued-as-new) after accepting the update and before answering it: the next run has the input. */
const RUN_ENDED = /completed before the update completed|continued.as.new/i;

/** Update attempts while the thread's workflow task is failing (≈ 6 s of backoff) before the input goes by signal. */
const TASK_FAILING_ATTEMPTS = 7;
/**
 * Update attempts while the thread has as many updates in flight as the server allows (≈ 30 s of jittered backoff)
 * before the input goes by signal: a flood of acknowledged deliveries into one thread waits its turn.
 */
const UPDATE_LIMIT_ATTEMPTS = 40;

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
    let limited = 0;
    for (let attempt = 0; ; attempt++) {
      let ack: DeliveryAck;
      try {
        ack = await handle.executeUpdate(deliverUpdate, { args: attempt > 0 ? [msg, { resend: true }] : [msg] });
      } catch (e) {
        if (e instanceof WorkflowNotFoundError) {
          let running: boolean;
          try {
            running = (await handle.describe()).status.name === 'RUNNING';
          } catch (d) {
            if (d instanceof WorkflowNotFoundError) throw new ThreadNotFoundError(msg.threadId);
            throw d;
          }
          if (!running) return (result = { delivered: false, reason: 'closed' });
          // The run the update went to ended under it ("workflow execution already completed" while it continued-as-
          // new): the thread goes on in its next run, which has the input if the first attempt reached it. Ask again.
          if (++limited >= UPDATE_LIMIT_ATTEMPTS) {
            const signalled = await deliverInput(client, msg, limits);
            return (result = signalled.delivered ? { ...signalled, acknowledged: false } : signalled);
          }
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        if (e instanceof WorkflowUpdateFailedError && !NOT_PROCESSED.test(updateWhy(e)) && !isUpdateLostWithTask(e)) {
          const why = updateWhy(e);
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
        } else if (
          isUpdateLimit(e) ||
          isUpdateLostWithTask(e) ||
          (e instanceof WorkflowUpdateFailedError && NOT_PROCESSED.test(updateWhy(e)))
        ) {
          // Nothing reached the thread: wait for a free update slot, then send the same input again.
          if (++limited >= UPDATE_LIMIT_ATTEMPTS) {
            const signalled = await deliverInput(client, msg, limits);
            return (result = signalled.delivered ? { ...signalled, acknowledged: false } : signalled);
          }
          await new Promise((r) => setTimeout(r, 200 + Math.random() * Math.min(1_500, 100 * 2 ** limited)));
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

/** The reason an update failed, as the server or the workflow said it. */
const updateWhy = (e: WorkflowUpdateFailedError): string => e.cause?.message ?? e.message;
