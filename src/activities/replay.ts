/**
 * The retry of a slice that already committed (a crashed or timed-out attempt whose commit landed, or a zombie
 * attempt that committed first): nothing is run or committed again; its committed result is answered.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import type { ConversationStore } from '../store/conversation-store';
import type { SliceDispatch } from './dispatch';
import { threadChain } from './history';

/** What a replay reads and calls, passed explicitly so that it depends on nothing else of the slice. */
export interface ReplayDependencies {
  store: ConversationStore;
  /** Starts the committed async call again (`SliceDispatch.dispatch`). */
  dispatch: SliceDispatch['dispatch'];
}

/**
 * A retry of a slice that already committed: dispatch again (tools are idempotent per call id) and return. A slice
 * that began locally has no input in Temporal's history, so its retry proves it asks for the same inputs: answering
 * for other ones would report inputs committed that are not (decision 50).
 */
export async function replayCommitted(
  deps: ReplayDependencies,
  input: SliceInput,
  prior: SliceResult,
): Promise<SliceResult> {
  if (input.local && prior.appended !== undefined) {
    const committed = await deps.store.load(
      input.threadId,
      input.expectedLength,
      input.expectedLength + prior.appended,
    );
    const same =
      prior.appended === input.append.length && committed.every((s, i) => s.messageId === input.append[i]?.messageId);
    if (!same) {
      throw ApplicationFailure.nonRetryable(
        `slice ${input.sliceId} was committed with other inputs (${prior.appended}) than this attempt's (${input.append.length})`,
        'SliceDiverged',
      );
    }
  }
  if (!prior.pendingCall) return prior;
  // Dispatch only while the call is still the thread's last item: a later slice has answered it otherwise.
  const last = (await deps.store.load(input.threadId, prior.length - 1, prior.length))[0]?.item;
  if (last?.kind !== 'tool_call' || last.id !== prior.pendingCall.id) return prior;
  const record = await deps.store.getThread(input.threadId);
  const call = { ...prior.pendingCall, args: last.args };
  const chain = await threadChain(deps.store, input.threadId);
  const followUps = await deps.dispatch(
    input.threadId,
    record?.rootThreadId ?? input.threadId,
    call,
    chain.slice(0, -1).map((r) => r.threadId),
    input.userId,
  );
  return { ...prior, followUps: [...prior.followUps, ...followUps] };
}
