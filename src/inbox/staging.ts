/**
 * Where an input travels. Small inputs go whole in their signal. Larger ones are staged in the conversation store and
 * their signal carries the staged form (`core/staged.ts`): Temporal history grows by well under a KiB per input
 * whatever its size, and the slice puts the content back before it commits.
 */
import { stagedForm, stagedPayload, isStaged } from '../core/staged';
import type { InputMessage } from '../core/types';
import type { ConversationStore } from '../store/conversation-store';
import { PayloadTooLargeError } from './errors';

/**
 * Inputs whose serialized form is larger are staged (given a store). Well under Temporal's limits (a warning at 256 KiB
 * per payload, failure at 2 MiB): the slice activity's input carries every input of a batch, so a handful of
 * unstaged inputs just under this still fit in one payload.
 */
export const STAGE_THRESHOLD_BYTES = 128 * 1024;

/** Default upper bound of one input, serialized, when it can be staged. */
export const DEFAULT_MAX_STAGED_INPUT_BYTES = 32 * 1024 * 1024;

export interface InputLimits {
  /** Where large inputs are staged; without one, every input travels whole in its signal. */
  store?: ConversationStore;
  /** Upper bound of one input, serialized (default 32 MiB with a store, 256 KiB without). */
  maxBytes?: number;
}

export interface PreparedInput {
  /** What the signal carries. */
  message: InputMessage;
  /** The staged blob, to discard when the input is not delivered after all. */
  stagedId?: string;
}

/**
 * Stages a validated input when it is larger than {@link STAGE_THRESHOLD_BYTES} and a store is at hand. `signalLimit`
 * bounds what is left for the signal: the staged form of an input with enormous metadata can still be too large.
 */
export async function stageIfLarge(
  message: InputMessage,
  store: ConversationStore | undefined,
  signalLimit: number,
): Promise<PreparedInput> {
  if (!store || isStaged(message)) return { message };
  if (Buffer.byteLength(JSON.stringify(message)) <= STAGE_THRESHOLD_BYTES) return { message };
  const ref = await store.stageInput(Buffer.from(stagedPayload(message), 'utf8'));
  const staged = stagedForm(message, ref);
  const left = Buffer.byteLength(JSON.stringify(staged));
  if (left > signalLimit) {
    await store.discardStaged([ref.id]);
    throw new PayloadTooLargeError(left, signalLimit);
  }
  return { message: staged, stagedId: ref.id };
}

/** Best effort: an orphaned blob costs disk space, never correctness. */
export async function discardPrepared(prepared: PreparedInput, store: ConversationStore | undefined): Promise<void> {
  if (prepared.stagedId && store) await store.discardStaged([prepared.stagedId]).catch(() => undefined);
}
