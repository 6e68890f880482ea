/**
 * Delivery of one input into a thread's queue: the single path used by clients and by tools (`ctx.send`).
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { InputMessage } from '../core/types';
import { validateInputMessage } from '../core/validate';
import { inputSignal } from '../workflows/definitions';
import { InvalidInputError, PayloadTooLargeError, ThreadNotFoundError } from './errors';

/** Default upper bound of one input, serialized (Temporal warns at 256 KiB per payload and fails at 2 MiB). */
export const DEFAULT_MAX_INPUT_BYTES = 256 * 1024;

export type DeliveryResult = { delivered: true } | { delivered: false; reason: 'closed' };

/** Validates a message and returns it, or throws {@link InvalidInputError} / {@link PayloadTooLargeError}. */
export function checkInput(message: unknown, maxBytes = DEFAULT_MAX_INPUT_BYTES): InputMessage {
  const v = validateInputMessage(message);
  if (!v.ok) throw new InvalidInputError(v.error);
  const bytes = Buffer.byteLength(JSON.stringify(v.value));
  if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  return v.value;
}

/**
 * Signals a message to its thread. Never creates a thread: an unknown thread is a {@link ThreadNotFoundError};
 * a thread whose workflow has ended (closed) drops the message.
 */
export async function deliverInput(client: Client, message: unknown, maxBytes?: number): Promise<DeliveryResult> {
  const msg = checkInput(message, maxBytes);
  const handle = client.workflow.getHandle(msg.threadId);
  try {
    await handle.signal(inputSignal, msg);
    return { delivered: true };
  } catch (e) {
    if (!(e instanceof WorkflowNotFoundError)) throw e;
    try {
      await handle.describe();
    } catch (d) {
      if (d instanceof WorkflowNotFoundError) throw new ThreadNotFoundError(msg.threadId);
      throw d;
    }
    return { delivered: false, reason: 'closed' };
  }
}
