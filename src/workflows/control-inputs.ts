/**
 * Control inputs: compaction, tool prompts and rewinds (rewind.ts). Compaction, the workflow's half (docs/semantics.md §12): a `compaction`
 * input starts a compaction child that inherits the history up to the safe spawn point and summarizes it; its closing
 * slice saves the summary in the store (which every later load of this thread applies), and its `compaction_complete`
 * input ends the round here. No completion runs in this thread for either input.
 */
import { jsonBytes, newestWithin, PROMPT_MAX_BYTES, PROMPTS_MAX_BYTES, PROMPTS_PER_CALL } from '../core/state-bounds';
import { uuid4 } from '@temporalio/workflow';
import { resultInput } from '../core/inputs';
import { COMPACTION_TOOL_NAME, compactionInstructions } from '../core/texts';
import type { InputMessage } from '../core/types';
import { startThread, type ActionContext } from './runtime-actions';
import type { ThreadSeed } from './contract';
import { v08 } from './patches';
import { rewindTo } from './rewind';

/** Inputs the workflow handles itself: no history, no completion. */
export const isControlInput = (m: InputMessage): boolean =>
  m.synthetic?.type === 'compaction' ||
  m.synthetic?.type === 'compaction_complete' ||
  m.synthetic?.type === 'prompt' ||
  m.synthetic?.type === 'rewind';

async function startCompaction(ctx: ActionContext, safePoint: number): Promise<void> {
  const childId = uuid4();
  const callId = uuid4();
  const seed: ThreadSeed = {
    pendingCall: { id: callId, name: COMPACTION_TOOL_NAME, passive: false },
    prefix: [
      {
        messageId: `${callId}-compaction-call`,
        item: { kind: 'tool_call', id: callId, name: COMPACTION_TOOL_NAME, args: {} },
      },
    ],
    inbox: [resultInput(childId, callId, compactionInstructions(childId), callId)],
    eventTargets: [],
  };
  // Marked before the start completes: the thread reads as compacting (and idle) while the child starts.
  ctx.st.compaction.running = childId;
  await startThread(
    ctx,
    childId,
    'compaction',
    { parentThreadId: ctx.args.threadId, toolCallId: callId, order: safePoint },
    seed,
    `compaction of ${ctx.args.threadId} up to item ${safePoint}`,
  );
}

/**
 * Handles the control inputs of a batch; returns the rest. A compaction request while a compaction runs is dropped
 * as a duplicate (the reference would start a second child for a redelivered request). A prompt counts only for the
 * call now pending; it lasts until that call is answered or interrupted.
 */
export async function handleControlInputs(
  ctx: ActionContext,
  batch: InputMessage[],
  safePoint: number,
  drop: (reason: 'duplicate' | 'closed' | 'wrong_call' | 'malformed', m: InputMessage) => void,
): Promise<InputMessage[]> {
  const rest: InputMessage[] = [];
  for (const m of batch) {
    const syn = m.synthetic;
    if (!isControlInput(m)) {
      rest.push(m);
    } else if (ctx.st.prep.closed) {
      drop('closed', m);
    } else if (syn?.type === 'prompt') {
      if (ctx.st.prep.pendingCall?.id !== syn.toolCallId) {
        drop('wrong_call', m);
        continue;
      }
      // Bounded (issue 38 §2): one prompt, and all of a call's, newest kept. State only: no command depends on them.
      if (jsonBytes(syn.prompt) > PROMPT_MAX_BYTES) {
        drop('malformed', m);
        continue;
      }
      const same = (p: (typeof ctx.st.prompts)[number]) =>
        p.kind === syn.prompt.kind &&
        (p.kind !== 'user_choice' || (syn.prompt.kind === 'user_choice' && p.id === syn.prompt.id));
      ctx.st.prompts = newestWithin(
        [...ctx.st.prompts.filter((p) => !same(p)), { ...syn.prompt, toolCallId: syn.toolCallId }],
        PROMPTS_PER_CALL,
        PROMPTS_MAX_BYTES,
      );
    } else if (syn?.type === 'rewind') {
      // 0.8 (issue 28 §2): its patch asked here, where 0.8 asked it. A rewind the thread cannot make is malformed.
      v08();
      if ((await rewindTo(ctx, syn.to)) !== undefined) drop('malformed', m);
    } else if (syn?.type === 'compaction') {
      if (ctx.st.compaction.running) drop('duplicate', m);
      else await startCompaction(ctx, safePoint);
    } else if (ctx.st.compaction.running) {
      ctx.st.compaction.running = undefined;
      ctx.st.compaction.completed += 1;
    } else {
      drop('duplicate', m);
    }
  }
  return rest;
}
