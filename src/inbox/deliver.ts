/**
 * Delivery of one input into a thread's queue: the single path used by clients and by tools (`ctx.send`).
 */
import { longIdError } from '../core/state-bounds';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { DropReason, InputMessage } from '../core/types';
import { inputLimitViolation, validateInputMessage } from '../core/validate';
import { sendWhileBusy } from './busy';
import { inputSignal, kindSignals } from '../workflows/definitions';
import { readablePayload, signalNameOf } from '../core/readable-input';
import { oversizeInput } from '../core/staged';
import { InvalidInputError, PayloadTooLargeError, ThreadNotFoundError } from './errors';
import {
  DEFAULT_MAX_STAGED_INPUT_BYTES,
  discardPrepared,
  type InputLimits,
  type PreparedInput,
  stageIfLarge,
} from './staging';

/**
 * Default upper bound of an input that travels whole in its signal, serialized (Temporal warns at 256 KiB per payload
 * and fails at 2 MiB); with a store to stage in, the bound is {@link DEFAULT_MAX_STAGED_INPUT_BYTES}.
 */
export const DEFAULT_MAX_INPUT_BYTES = 256 * 1024;

/**
 * What became of a delivery. By signal (the default) `delivered: true` means the thread has the input queued; with
 * acknowledgement (`acknowledged: true`) it means the thread took it (`deferred`: held back behind the pending call), and
 * `delivered: false` carries the prepare rules' reason (`wrong_call`, `duplicate`, `unknown_subscription`, ...).
 */
export type DeliveryResult =
  { delivered: true; acknowledged?: boolean; deferred?: boolean } | { delivered: false; reason: 'closed' | DropReason };

/**
 * How an input travels. `signalNames: 'by-kind'` sends it by its kind's signal (`user_text`, `tool_result`, `event`,
 * `report`, `control`) with its readable part first (decision 62): only once every worker runs release 0.5 or later,
 * because an older worker has no handler for those names and leaves the input unread. Default `input`, which every
 * release takes. `toolName`: the sending tool, shown first in a tool result's or event's payload.
 */
export interface SignalOptions {
  signalNames?: 'input' | 'by-kind';
  toolName?: string;
}

/** The signal and payload that carry `msg`. */
export function signalFor(msg: InputMessage, options: SignalOptions = {}) {
  return options.signalNames === 'by-kind'
    ? { signal: kindSignals[signalNameOf(msg)], payload: readablePayload(msg, options.toolName) as unknown }
    : { signal: inputSignal, payload: msg as unknown };
}

/** Validates a message and returns it, or throws {@link InvalidInputError} / {@link PayloadTooLargeError}. */
export function checkInput(message: unknown, maxBytes = DEFAULT_MAX_INPUT_BYTES): InputMessage {
  // First: what follows recurses over the input (validation messages quote values, JSON.stringify, the payload
  // converter), and a deep one would overflow the stack with a raw RangeError instead of this typed error.
  const shape = inputLimitViolation(message);
  if (shape) throw new InvalidInputError(shape);
  const v = validateInputMessage(message);
  if (!v.ok) throw new InvalidInputError(v.error);
  // Ids are kept in the thread's state (its dedup window): bounded here, where every client, the CLI and the gateway
  // deliver (issue 38 §2). The workflow itself takes up to the input checks' string limit and sheds by bytes.
  const longId = longIdError(v.value);
  if (longId) throw new InvalidInputError(longId);
  const bytes = Buffer.byteLength(JSON.stringify(v.value));
  if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  return v.value;
}

/** Validates an input and, when it is large and `limits.store` is given, stages it (see `./staging`). */
export async function prepareInput(message: unknown, limits: number | InputLimits = {}): Promise<PreparedInput> {
  const { store, maxBytes } = typeof limits === 'number' ? { store: undefined, maxBytes: limits } : limits;
  const msg = checkInput(message, maxBytes ?? (store ? DEFAULT_MAX_STAGED_INPUT_BYTES : DEFAULT_MAX_INPUT_BYTES));
  return stageIfLarge(msg, store, DEFAULT_MAX_INPUT_BYTES);
}

/**
 * Signals a message to its thread, staging it first when it is large and `limits` names a store (a number is the
 * upper bound alone). Never creates a thread: an unknown thread is a {@link ThreadNotFoundError}; a thread whose
 * workflow has ended (closed) drops the message.
 */
export async function deliverInput(
  client: Client,
  message: unknown,
  limits?: number | InputLimits,
  how?: SignalOptions,
): Promise<DeliveryResult> {
  const prepared = await prepareInput(message, limits);
  let result: DeliveryResult | undefined;
  try {
    return (result = await signalInput(client, prepared.message, how));
  } finally {
    if (result?.delivered !== true)
      await discardPrepared(prepared, typeof limits === 'object' ? limits.store : undefined);
  }
}

/**
 * What `ctx.send` does: {@link deliverInput}, except that a tool result or event over the limit is replaced by an error
 * result the model reads (its size, the limit, how it began). The call is answered either way: a throw inside a tool
 * would leave it pending for good.
 */
export async function deliverAnswering(
  client: Client,
  message: InputMessage,
  limits?: number | InputLimits,
  how?: SignalOptions,
): Promise<DeliveryResult> {
  try {
    return await deliverInput(client, message, limits, how);
  } catch (e) {
    const answer = e instanceof PayloadTooLargeError ? oversizeInput(message, e.bytes, e.limit) : undefined;
    if (!answer) throw e;
    return deliverInput(client, answer, limits, how);
  }
}

async function signalInput(client: Client, msg: InputMessage, how?: SignalOptions): Promise<DeliveryResult> {
  const handle = client.workflow.getHandle(msg.threadId);
  const { signal, payload } = signalFor(msg, how);
  try {
    await sendWhileBusy(msg.threadId, () => handle.signal(signal, payload));
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
