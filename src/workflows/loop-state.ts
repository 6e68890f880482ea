/**
 * The thread loop's own state for one run (not carried across continue-as-new): whether a slice runs or the loop is
 * busy between slices, what arrived in this run, where a blocked thread stopped, and what the last
 * slice called — with the small readings of it that the loop, the handlers and the slice summaries share. Nothing
 * here issues a command: the state is read by conditions, queries and the `waitForIdle` update.
 */
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import { condition, metricMeter, setHandler, workflowInfo } from '@temporalio/workflow';
import { callbackState } from '../core/callback-state';
import { METRICS } from '../core/metric-names';
import type { InputMessage, PendingCall, ThreadStatus } from '../core/types';
import { isUserText } from '../core/validate';
import {
  callbackStateQuery,
  capacitySignal,
  HANDLER_DOCS,
  statusQuery,
  waitForIdleUpdate,
  type WaitOptions,
} from './definitions';
import type { ThreadState } from './state';

export interface LoopState {
  /** A slice activity runs (status `running`). */
  sliceRunning: boolean;
  /**
   * Also busy while a batch is being turned into a slice or a slice's action carried out (a child starting), so a
   * wait cannot return with a spawn half done (0.1 looked idle there).
   */
  acting: boolean;
  /** The slice about to run retries the items of one that did not commit. */
  retrying: boolean;
  /** The thread closed itself: its run ends once its open handlers have answered. */
  closed: boolean;
  /**
   * A `migrate` input arrived (0.12, issue 39): the run continues as new at its next pause between slices, whatever
   * else it waits for. Cleared only if its state is too large to carry (`status().oversizedState` says so).
   */
  migrating: boolean;
  /** A user text interrupted the last slice: the next batch ends before the first input after that text. */
  interruptNext: boolean;
  /**
   * A `capacity` signal came since the last slice started (0.13, issue 41): a grant of provider capacity is held for
   * the thread, which stops waiting for it.
   */
  capacityWoken: boolean;
  /** User texts (not yet processed) that have arrived in this run. */
  userTextsArrived: number;
  /** Inputs that have arrived in this run. */
  inputsArrived: number;
  /** When the thread last blocked in this run: inputs arrived and queued then. */
  blockedAt: { inputs: number; queued: number } | undefined;
  /** The workflow task (by its history length) whose first slice ran locally. */
  lastLocalTask: number;
  /** The last async call a slice dispatched: names the result that answers it in the next slice's summary. */
  lastCall: PendingCall | null;
  /** `name {args}` of the last call: what the next summary says came before its result. */
  lastCallLine: string | undefined;
  /** The reply that ended the last turn: what the next summary says came before. */
  replyBefore: string | undefined;

  /** Something new since the thread blocked: a signal, or a result the workflow queued itself (a timer, a child start). */
  newSinceBlock(): boolean;
  /** Nothing to do until the next input: what `waitForIdle` waits for. */
  idle(): boolean;
  /** What the loop waits for before it takes the next batch. */
  hasWork(): boolean;
  /** Puts an arrived input (signal or `deliver` update) into the queue and counts it. */
  enqueue(m: InputMessage): void;
  /**
   * Inputs that `deliver` updates put into the queue, by id: the history length of the workflow task that admitted
   * each (decision 67). Kept only while queued.
   */
  admittedByUpdate: Map<string, number>;
  /** `enqueue` for a `deliver` update: also notes the task that admitted the input. */
  enqueueAdmitted(m: InputMessage): void;
  /** The tool a call id names: the last call, a subscription or an event target. */
  toolName(callId: string): string | undefined;
  /** The `name {args}` line of the last call, if `callId` is it. */
  callLine(callId: string): string | undefined;
}

/** The loop state of a run that starts from `st` (restored, or fresh). */
export function loopState(st: ThreadState): LoopState {
  // Metrics issue no commands, and the SDK skips them while replaying: every input is counted once.
  const accepted = metricMeter.createCounter(METRICS.inputsAccepted.name, undefined, METRICS.inputsAccepted.help);
  const s: LoopState = {
    sliceRunning: false,
    acting: false,
    retrying: false,
    closed: false,
    migrating: false,
    interruptNext: false,
    capacityWoken: false,
    userTextsArrived: 0,
    inputsArrived: 0,
    blockedAt: undefined,
    lastLocalTask: -1,
    lastCall: st.prep.pendingCall,
    lastCallLine: undefined,
    replyBefore: undefined,

    newSinceBlock: () =>
      s.blockedAt !== undefined && (s.inputsArrived > s.blockedAt.inputs || st.inbox.length > s.blockedAt.queued),
    // A thread blocked on its store waits for the next input whatever is queued: that is idle too.
    // A thread over budget waits for a raise, whatever is queued: idle too.
    idle: () =>
      !s.acting &&
      !s.sliceRunning &&
      (st.overBudget !== undefined ||
        // Release 0.13: a thread whose agent no worker defines waits for it, whatever is queued: idle too.
        st.agentMissing !== undefined ||
        (s.blockedAt !== undefined && !s.newSinceBlock()) ||
        (st.inbox.length === 0 && (st.carry.length === 0 || st.blocked))),
    // A blocked thread retries once per input that arrives after it blocked, never in a loop on the queued ones.
    // Over budget: inputs queue, nothing runs until a `budget` signal clears it (never set in older histories).
    hasWork: () =>
      st.overBudget === undefined &&
      (s.blockedAt !== undefined ? s.newSinceBlock() : st.inbox.length > 0 || (st.carry.length > 0 && !st.blocked)),
    enqueue: (m) => {
      accepted.add(1);
      st.inbox.push(m);
      s.inputsArrived += 1;
      if (isUserText(m) && !st.prep.processedInputIds.has(m.id)) s.userTextsArrived += 1;
    },
    admittedByUpdate: new Map(),
    enqueueAdmitted: (m) => {
      s.enqueue(m);
      // Only the current task's admissions matter; older entries are dropped as the map is refilled.
      const now = workflowInfo().historyLength;
      for (const [id, at] of s.admittedByUpdate) if (at !== now) s.admittedByUpdate.delete(id);
      s.admittedByUpdate.set(m.id, now);
    },
    toolName: (id) =>
      s.lastCall?.id === id ? s.lastCall.name : (st.prep.subscriptions.get(id) ?? st.prep.eventTargets.get(id)),
    callLine: (id) => (s.lastCall?.id === id ? s.lastCallLine : undefined),
  };
  return s;
}

/**
 * Registers the `status` and `callbackState` queries and the `waitForIdle` update, in that order (after the inbox's
 * handlers, as before). Queries issue no commands; an update's only commands are its own.
 */
export function installStatusHandlers(st: ThreadState, loop: LoopState, snapshot: () => ThreadStatus): void {
  setHandler(statusQuery, snapshot, { description: HANDLER_DOCS.status });
  // A flag only: read by the wait for capacity (asked behind 0.13's patch), no command of its own.
  setHandler(
    capacitySignal,
    () => {
      loop.capacityWoken = true;
    },
    { description: HANDLER_DOCS.capacity },
  );
  // For the RAP gateway's revocation check; a query issues no commands, so it is replay-safe.
  setHandler(callbackStateQuery, (callId: string) => callbackState(st.prep, callId), {
    description: HANDLER_DOCS.callbackState,
  });
  // A wait still open when the run continues-as-new is abandoned on purpose: the client asks the next run again.
  setHandler(
    waitForIdleUpdate,
    async (options: WaitOptions) => {
      // A closed thread is idle for good: its run waits for this handler before it ends, so it must answer.
      await condition(
        () =>
          loop.closed || (loop.idle() && !(options?.settled && st.prep.pendingCall && !st.prep.pendingCall.passive)),
      );
      return snapshot();
    },
    { unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON, description: HANDLER_DOCS.waitForIdle },
  );
}

/** Drops the prompts whose call is no longer the pending one: prompts live as long as their call is pending. */
export function dropStalePrompts(st: ThreadState): void {
  if (st.prompts.length > 0) st.prompts = st.prompts.filter((p) => p.toolCallId === st.prep.pendingCall?.id);
}
