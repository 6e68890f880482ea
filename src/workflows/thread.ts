/**
 * The thread workflow (docs/architecture.md, "The slice protocol"; its rules: docs/semantics.md): an inbox of signals, processed in batches, one slice at a time.
 * Its parts: the run's loop state and status handlers (`loop-state.ts`), taking a batch (`next-batch.ts`), running
 * it as a slice and applying the outcome (`slice-step.ts`, `slice-runner.ts`), and continue-as-new
 * (`continue-as-new.ts`). Every await of the loop is here, so this function shows where the workflow waits and in
 * which order it issues its commands; the parts it calls between them are synchronous.
 * Deterministic: it imports only the Temporal workflow API and `src/core`.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { sliceIdFor } from '../core/ids';
import type { Dropped } from '../core/prepare';
import type { SliceInputs } from '../core/slice-protocol';
import type { StoredItem } from '../core/types';
import { installDeliverUpdate } from './acknowledged';
import { installBudgetSignal } from './budget';
import { continueAsNewDue, nextRunWithin, rememberedInputIds } from './continue-as-new';
import { handleControlInputs } from './control-inputs';
import { installInbox } from './inbox';
import { installStatusHandlers, loopState } from './loop-state';
import { beginTurn, keepCommittedInputs, nextBatch, prepareTaken, sliceAppend } from './next-batch';
import { carryOut, spawnEventChild, startTimer, type ActionContext } from './runtime-actions';
import { runBatch, settleSlice, type SliceContext } from './slice-step';
import type { ThreadWorkflowArgs } from './contract';
import { restoreState, threadArgs } from './state';
import { adoptRules } from './base-release';
import { cancelChildren } from './cancel-children';
import { sliceRunner } from './slice-runner';
import { statusView } from './status-view';
import { movedTo } from './agent-move';
import { agentRecheckMs } from '../core/agents';
import { v013 } from './patches';

/** A thread: started by the client with its {@link ThreadWorkflowArgs}, or by hand with none (a root thread). */
export async function agentThread(given?: ThreadWorkflowArgs): Promise<void> {
  const info = workflowInfo();
  const { args, refused } = threadArgs(given, {
    workflowId: info.workflowId,
    parentWorkflowId: info.parent?.workflowId,
    continued: info.continuedFromExecutionRunId !== undefined,
  });
  const { threadId } = args;
  const opts = args.options ?? {};
  // Before anything asks a patch or runs a local slice: the rules this run follows without asking (decisions 66, 79).
  adoptRules(opts);
  const st = restoreState(args);
  const actx: ActionContext = { args, st };
  const loop = loopState(st);
  const { snapshot, publish, showDetails } = statusView(args, st, () => loop.sliceRunning);
  // Handlers in their recorded order: the inbox's signals and queries, `deliver`, then status and `waitForIdle`.
  const inbox = installInbox(
    threadId,
    st,
    loop.enqueue,
    loop.toolName,
    () => showDetails(),
    () => (loop.migrating = true),
    (agent) => {
      movedTo(st, agent);
      publish();
    },
  );
  const count = inbox.drop;
  // What a hand-made start claimed that Temporal does not (decision 83): left out, counted and shown as a drop.
  for (const r of refused) count('malformed', undefined, `start input: ${r}`);
  const acks = installDeliverUpdate(threadId, st, loop.enqueueAdmitted, count);
  const slices = sliceRunner(opts, {
    userTexts: () => loop.userTextsArrived,
    interrupting: () => (loop.interruptNext = true),
  });
  installStatusHandlers(st, loop, snapshot);
  installBudgetSignal(st, () => showDetails());
  const sctx: SliceContext = { args, st, loop, inbox, slices, publish };

  /**
   * Continues as new with this run's state (decision 45), abandoning open waits (their clients ask the next run).
   * Returns only when the state is too large to carry: the run goes on, says why, and tries again after the next slice.
   */
  const moveOn = async (): Promise<void> => {
    st.acks = acks.handOver(rememberedInputIds(opts, st));
    const nextRun = nextRunWithin(args, st);
    if (!('overBytes' in nextRun)) await continueAsNew<typeof agentThread>(nextRun);
    else {
      st.acks = [];
      if (st.carryOverBytes === undefined) log.warn('state too large to continue as new', nextRun);
      st.carryOverBytes = nextRun.overBytes;
      // A migrate cannot be carried out either: it ends here, and status().oversizedState says why.
      loop.migrating = false;
      publish();
    }
  };

  for (const t of st.timers) startTimer(actx, t);
  publish();
  // Before the loop first waits: in the first task, as a signal sent with the start is. No command of its own. A run
  // continued as new has neither field (nextRunArgs).
  if (args.firstInput !== undefined) inbox.take(args.firstInput, args.firstInputSignal ?? 'input', 'start input');
  try {
    for (;;) {
      loop.acting = false;
      if (st.agentMissing) {
        // 0.13 (issue 40): no worker defines the thread's agent. It waits, queueing inputs, until a `set_agent` or its
        // next check (a timer only on this path: no older history has it).
        // An input arriving meanwhile checks again too (its agent may be back), once per input, like a blocked thread.
        const arrived = loop.inputsArrived;
        await condition(
          () => st.agentMissing === undefined || loop.migrating || loop.inputsArrived > arrived,
          agentRecheckMs(st.agentChecks),
        );
        st.agentMissing = undefined;
      }
      // A run asked to migrate (0.12) waits for nothing else: it continues as new between slices, with its queue.
      await condition(() => loop.hasWork() || loop.migrating);
      if (loop.migrating && !loop.hasWork()) {
        await moveOn();
        continue;
      }
      if (st.throttled) {
        // Waiting for provider capacity holds no slot and spends no attempt; jittered, so woken threads spread out.
        const ms = Math.round(st.throttled.retryAfterMs * (1 + 0.25 * jitter()));
        // 0.13 (issue 41): a thread on its key's wake-up list goes on at the `capacity` signal, its timer a fallback
        // (asked only for such a refusal, which only a worker of 0.13 gives). A signal that came first skips the timer.
        if (st.throttled.queued === true && v013()) {
          if (!loop.capacityWoken) await condition(() => loop.capacityWoken, ms);
        } else await sleep(ms);
        st.throttled = undefined;
      }
      let local = beginTurn(st, loop, slices);
      let append: StoredItem[];
      let interruptedCalls: string[] = [];
      let inputs: SliceInputs | undefined;
      if (st.carry.length > 0) {
        // Retry exactly what the failed slice was given, under the same slice id, before anything new.
        st.blocked = false;
        append = st.carry;
      } else {
        const { batch, safePoint, several, remote } = nextBatch(st, loop, local);
        if (remote) local = false;
        if (several)
          inputs = keepCommittedInputs(st, batch, await slices.peek(threadId, sliceIdFor(threadId, st.slices)));
        // Control inputs dropped here are answered as dropped to an acknowledged delivery, like the prepare rules' drops.
        const controlDrops: Dropped[] = [];
        const rest = await handleControlInputs(actx, batch, safePoint, (reason, m) => {
          count(reason, m);
          controlDrops.push({ id: m.id, reason });
        });
        const prep = prepareTaken(st, batch, rest, count, acks, controlDrops);
        for (const req of prep.eventChildren) await spawnEventChild(actx, req, safePoint);
        if (!prep.ready) {
          publish();
          continue;
        }
        append = sliceAppend(opts, st, prep);
        interruptedCalls = prep.interruptedCalls;
      }
      const outcome = await runBatch(sctx, append, interruptedCalls, local, inputs);
      const action = settleSlice(sctx, outcome, append);
      if (action && (await carryOut(actx, action))) {
        // Open waits and acknowledged deliveries answer now: the run ends only once they have.
        loop.closed = true;
        loop.acting = false;
        acks.closeAll();
        publish();
        // A closed thread ends its workflow; later inputs find it closed and are dropped.
        await condition(allHandlersFinished);
        return;
      }
      publish();

      // Asked after every slice, a migrate or not (it asks a patch).
      const due = continueAsNewDue(opts, st);
      if (due || loop.migrating) await moveOn();
      else st.carryOverBytes = undefined;
    }
  } catch (e) {
    // Temporal's own cancel (release 0.10, decision 76): the children go with the thread.
    if (isCancellation(e)) await cancelChildren(st);
    throw e;
  }
}

/** A deterministic fraction in [0, 1): the workflow's seeded random source, through the SDK's `uuid4`. */
const jitter = (): number => parseInt(uuid4().slice(0, 8), 16) / 2 ** 32;
