/**
 * The thread workflow (docs/architecture.md, "The slice protocol"; its rules: docs/semantics.md): an inbox of signals, processed in batches, one slice at a time (`slice-runner.ts`).
 * Deterministic: it imports only the Temporal workflow API and `src/core`.
 */
import {
  condition,
  continueAsNew,
  allHandlersFinished,
  metricMeter,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  uuid4,
} from '@temporalio/workflow';
import { callbackState } from '../core/callback-state';
import { METRICS } from '../core/metric-names';
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import { sliceIdFor } from '../core/ids';
import { applyDeferral, prepareBatch, splitInterruptBatch } from '../core/prepare';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import { addUsage, type InputMessage, type StoredItem } from '../core/types';
import { compactionInput } from '../core/inputs';
import { installDeliverUpdate } from './acknowledged';
import { handleControlInputs } from './control-inputs';
import { sliceSummary, titleOf } from './ui-text';
import { installInbox } from './inbox';
import { isUserText } from '../core/validate';
import { callbackStateQuery, HANDLER_DOCS, searchAttributes, statusQuery, waitForIdleUpdate, type WaitOptions } from './definitions';
import { carryOut, spawnEventChild, startTimer, userIdOf, type ActionContext } from './runtime-actions';
import { CARRY_MAX_CHARS, serializedChars, takeBatch } from '../core/batching';
import { BLOCKING_FAILURES, SET_ASIDE_KEPT, setAside } from './failures';
import { v02, v03, v05 } from './patches';
import { carryState, restoreState, threadArgs, type ThreadWorkflowArgs } from './state';
import { type SliceOutcome, sliceRunner } from './slice-runner';
import { statusView } from './status-view';

/** A thread: started by the client with its {@link ThreadWorkflowArgs}, or by hand with none (a root thread). */
export async function agentThread(given?: ThreadWorkflowArgs): Promise<void> {
  const args = threadArgs(given, workflowInfo().workflowId);
  const { threadId } = args;
  const opts = args.options ?? {};
  const st = restoreState(args);
  const actx: ActionContext = { args, st };

  let sliceRunning = false;
  let retrying = false;
  let interruptNext = false;
  /** User texts (not yet processed) that have arrived in this run. */
  let userTextsArrived = 0;
  /** Inputs that have arrived in this run. */
  let inputsArrived = 0;
  /** When the thread last blocked (release 0.2 rules only): inputs arrived and queued then. */
  let blockedAt: { inputs: number; queued: number } | undefined;
  // Something new since the thread blocked: a signal, or a result the workflow queued itself (a timer, a child start).
  const newSinceBlock = () => blockedAt !== undefined && (inputsArrived > blockedAt.inputs || st.inbox.length > blockedAt.queued);
  // Metrics issue no commands, and the SDK skips them while replaying: every input is counted once.
  const accepted = metricMeter.createCounter(METRICS.inputsAccepted.name, undefined, METRICS.inputsAccepted.help);
  const { snapshot, publish, showDetails } = statusView(args, st, () => sliceRunning);
  // 0.2: also busy while a batch is being turned into a slice or a slice's action carried out (a child starting):
  // 0.1 looked idle there, and a wait could return with a spawn half done.
  let acting = false;
  // A thread blocked on its store (0.2) waits for the next input whatever is queued: that is idle too.
  const idle = () =>
    !acting &&
    !sliceRunning &&
    ((blockedAt !== undefined && !newSinceBlock()) || (st.inbox.length === 0 && (st.carry.length === 0 || st.blocked)));

  const enqueue = (m: InputMessage) => {
    accepted.add(1);
    st.inbox.push(m);
    inputsArrived += 1;
    if (isUserText(m) && !st.prep.processedInputIds.has(m.id)) userTextsArrived += 1;
  };
  // The last async call a slice dispatched: names the result that answers it in the next slice's summary.
  let lastCall = st.prep.pendingCall;
  const toolName = (id: string) => (lastCall?.id === id ? lastCall.name : (st.prep.subscriptions.get(id) ?? st.prep.eventTargets.get(id)));
  const inbox = installInbox(threadId, st, enqueue, toolName, () => showDetails());
  const count = inbox.drop;
  const acks = installDeliverUpdate(threadId, st, enqueue, count);
  const slices = sliceRunner(opts, { userTexts: () => userTextsArrived, interrupting: () => (interruptNext = true) });
  /** The workflow task (by its history length) whose first slice ran locally. */
  let lastLocalTask = -1;
  setHandler(statusQuery, snapshot, { description: HANDLER_DOCS.status });
  // For the RAP gateway's revocation check; a query issues no commands, so it is replay-safe.
  setHandler(callbackStateQuery, (callId: string) => callbackState(st.prep, callId), { description: HANDLER_DOCS.callbackState });
  // A wait still open when the run continues-as-new is abandoned on purpose: the client asks the next run again.
  setHandler(
    waitForIdleUpdate,
    async (options: WaitOptions) => {
      await condition(() => idle() && !(options?.settled && st.prep.pendingCall && !st.prep.pendingCall.passive));
      return snapshot();
    },
    { unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON, description: HANDLER_DOCS.waitForIdle },
  );

  /** `name {args}` of the last call, and the reply that ended the last turn: what the next summary says came before. */
  let lastCallLine: string | undefined;
  let replyBefore: string | undefined;
  const callLine = (id: string) => (lastCall?.id === id ? lastCallLine : undefined);
  /** The thread's title in its memo, from the first user text (children get theirs when they start). */
  const maybeTitle = (append: StoredItem[]) => {
    // upsertMemo updates workflowInfo().memo too: one title per thread, across continue-as-new.
    if (workflowInfo().memo?.title !== undefined) return;
    const first = append.find((s) => s.item.kind === 'user');
    if (first?.item.kind !== 'user') return;
    const title = titleOf(first.item.text);
    upsertMemo({ title });
    // 0.5, asked only for threads that write titles (decision 62): the UI's `Title` column, once per thread.
    if (opts.titleSearchAttribute && v05()) upsertSearchAttributes([{ key: searchAttributes.Title, value: title }]);
  };
  /** Prompts live as long as their call is the pending one. */
  const dropStalePrompts = () => {
    if (st.prompts.length > 0) st.prompts = st.prompts.filter((p) => p.toolCallId === st.prep.pendingCall?.id);
  };

  /** Runs one slice; a user text arriving meanwhile cancels it (the slice commits what it streamed). */
  const runOneSlice = async (append: StoredItem[], interruptedCalls: string[], local: boolean): Promise<SliceOutcome> => {
    const input: SliceInput = {
      threadId,
      kind: args.kind,
      sliceId: sliceIdFor(threadId, st.slices),
      append,
      expectedLength: st.length,
      subscriptions: [...st.prep.subscriptions.keys()],
    };
    if (args.spawn) input.spawn = args.spawn;
    if (interruptedCalls.length > 0) input.interruptedCalls = interruptedCalls;
    const userId = userIdOf(actx);
    if (userId !== undefined) input.userId = userId;
    return slices.run(input, sliceSummary(st.slices + 1, append, { toolName, callLine, ...(replyBefore !== undefined && { replyBefore }) }, retrying), local);
  };

  const apply = (r: SliceResult) => {
    st.carry = [];
    st.length = r.length;
    st.slices += 1;
    st.prep.pendingCall = r.pendingCall;
    if (r.pendingCall) lastCall = r.pendingCall;
    // The pending call is the slice's last: its line names it in the summary of the slice its result starts.
    const pendingName = r.pendingCall ? `${r.pendingCall.name} ` : undefined;
    lastCallLine = pendingName ? [...(r.calls ?? [])].reverse().find((c) => c.startsWith(pendingName)) : undefined;
    replyBefore = r.pendingCall ? undefined : r.lastText;
    st.lastCalls = r.calls;
    inbox.note([], [...(r.lastText ? [`assistant: ${r.lastText}`] : []), ...(r.calls ?? []).map((c) => `call ${c}`)]);
    dropStalePrompts();
    for (const id of r.answeredCallIds) st.prep.processedToolCalls.add(id);
    for (const id of r.cancelledSubscriptions ?? []) st.prep.subscriptions.delete(id);
    // Results produced by dispatch (failures, validation) go ahead of anything that arrived meanwhile.
    st.inbox.unshift(...r.followUps);
    if (r.usage) st.lastUsage = r.usage;
    st.usage = addUsage(st.usage, r.usage);
    // A message into our own queue, like a manual `thread.compact()`.
    if (r.compact && !st.compaction.running) st.inbox.push(compactionInput(uuid4(), threadId));
    if (r.lastText) st.lastText = r.lastText;
    st.lastError = r.error;
    st.failed = false;
    if (!r.interrupted) interruptNext = false;
  };

  for (const t of st.timers) startTimer(actx, t);
  publish();
  for (;;) {
    acting = false;
    // 0.2: a blocked thread retries once per input that arrives after it blocked, never in a loop on the queued ones.
    await condition(() => (blockedAt !== undefined ? newSinceBlock() : st.inbox.length > 0 || (st.carry.length > 0 && !st.blocked)));
    blockedAt = undefined;
    acting = v02();
    let append: StoredItem[];
    let interruptedCalls: string[] = [];
    retrying = st.carry.length > 0;
    // 0.3 (decision 50): only the first slice of a workflow task may run locally, so a task that fails after it leaves
    // at most one slice committed that its history does not show, and that slice's inputs are the queue's first only:
    // every attempt of the task starts from the same state and queue head, so it asks for the same slice again.
    const local = v03() && slices.localEnabled && workflowInfo().historyLength !== lastLocalTask;
    if (st.carry.length > 0) {
      // Retry exactly what the failed slice was given, under the same slice id, before anything new.
      st.blocked = false;
      append = st.carry;
    } else {
      // 0.2: a bounded batch, so a flood never builds an activity input Temporal refuses; what waits stays first.
      const bounded = v02();
      let batch = bounded ? takeBatch(st.inbox) : st.inbox.splice(0);
      if (interruptNext) {
        const split = splitInterruptBatch(batch);
        batch = split.batch;
        if (bounded) st.inbox.unshift(...split.rest);
        else st.inbox.push(...split.rest);
        interruptNext = false;
      }
      if (local && batch.length > 1) st.inbox.unshift(...batch.splice(1));
      // Event and compaction children inherit the committed history, without a trailing unanswered call.
      const safePoint = st.prep.pendingCall && !st.prep.processedToolCalls.has(st.prep.pendingCall.id) ? st.length - 1 : st.length;
      const taken = batch;
      batch = await handleControlInputs(actx, batch, safePoint, count);
      const prep = prepareBatch(st.prep, applyDeferral(st.prep, batch), uuid4);
      dropStalePrompts();
      const byId = prep.dropped.length > 0 ? new Map(taken.map((m) => [m.id, m])) : undefined;
      for (const d of prep.dropped) count(d.reason, byId?.get(d.id) ?? { id: d.id });
      acks.settle(taken, prep.dropped, st.prep.deferred);
      for (const req of prep.eventChildren) await spawnEventChild(actx, req, safePoint);
      if (!prep.ready) {
        publish();
        continue;
      }
      append = [...st.prefix.splice(0), ...prep.append];
      interruptedCalls = prep.interruptedCalls;
      maybeTitle(append);
    }
    st.carry = append;
    if (!retrying) inbox.note(append.map((s) => s.item));
    sliceRunning = true;
    publish();
    if (local) lastLocalTask = workflowInfo().historyLength;
    const outcome = await runOneSlice(append, interruptedCalls, local);
    sliceRunning = false;
    if ('ok' in outcome) {
      apply(outcome.ok);
      if (outcome.ok.action && (await carryOut(actx, outcome.ok.action))) {
        publish();
        // A closed thread ends its workflow; later inputs find it closed and are dropped.
        await condition(allHandlersFinished);
        return;
      }
    } else if ('failed' in outcome) {
      st.lastError = outcome.failed;
      if (v02()) {
        st.failed = true;
        if (!outcome.type || !BLOCKING_FAILURES.has(outcome.type)) {
          const aside = setAside(sliceIdFor(threadId, st.slices), append, outcome.failed);
          st.setAside = [...st.setAside, aside.record].slice(-SET_ASIDE_KEPT);
          // The next slice gets a new id: nothing of this one was committed, and its id must not answer for another.
          st.slices += 1;
          st.carry = aside.replacements;
        } else {
          st.blocked = true;
          blockedAt = { inputs: inputsArrived, queued: st.inbox.length };
        }
      } else {
        st.blocked = true;
      }
    }
    publish();

    const info = workflowInfo();
    // 0.1 waited for an idle moment, which a flooded thread never has, and Temporal terminated it at its history limit.
    // 0.2 continues between any two slices once the run is long, if what it carries stays small.
    const rules02 = v02();
    const due = rules02
      ? (info.continueAsNewSuggested || info.historyLength >= (opts.maxRunEvents ?? 2000)) &&
        serializedChars([st.inbox, st.prep.deferred, st.carry, st.prefix]) <= CARRY_MAX_CHARS
      : info.continueAsNewSuggested && idle();
    if (due) {
      // 0.1 waited for open waits to finish, which under load they never do; 0.2 abandons them (see the handler).
      if (!rules02) await condition(allHandlersFinished);
      await continueAsNew<typeof agentThread>({ ...args, seed: undefined, carried: carryState(st, opts.dedupWindow ?? 4096) });
    }
  }
}
