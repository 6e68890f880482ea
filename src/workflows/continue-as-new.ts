/**
 * When a thread's run continues-as-new, and what the next run starts from (decision 45). The decision is taken after
 * every slice; the loop itself awaits `continueAsNew`, so the command comes at the same point, and in the same
 * microtask order, as when the decision was inline.
 */
import { workflowInfo } from '@temporalio/workflow';
import { CARRY_MAX_CHARS, serializedChars } from '../core/batching';
import { CARRIED_MAX_BYTES, jsonBytes } from '../core/state-bounds';
import { v02 } from './patches';
import type { ThreadOptions, ThreadWorkflowArgs } from './contract';
import { carryState, DEDUP_WINDOW, lastN, type ThreadState } from './state';

/**
 * Whether the run continues-as-new after this slice, at once, abandoning open waits (see `waitForIdle`): between any
 * two slices once the run is long, if what it carries stays small (0.2; 0.1 waited for an idle moment, which a flooded
 * thread never has, and for open waits to finish, which under load they never do). Asks `v02()` once, every time, as
 * the loop always did.
 */
export function continueAsNewDue(opts: ThreadOptions, st: ThreadState): boolean {
  const info = workflowInfo();
  v02();
  return (
    (info.continueAsNewSuggested || info.historyLength >= (opts.maxRunEvents ?? 2000)) &&
    serializedChars([st.inbox, st.prep.deferred, st.carry, st.prefix]) <= CARRY_MAX_CHARS
  );
}

/** The next run's arguments: this run's, without the seed and first input (used up), with the state it carries. */
export function nextRunArgs(args: ThreadWorkflowArgs, st: ThreadState): ThreadWorkflowArgs {
  return {
    ...args,
    seed: undefined,
    firstInput: undefined,
    firstInputSignal: undefined,
    carried: carryState(st, args.options?.dedupWindow ?? DEDUP_WINDOW),
    // The current agent (a `set_agent` may have moved the thread since the start): only when there is one.
    ...(st.agent !== undefined && { agent: st.agent }),
  };
}

/**
 * The next run's arguments when they fit {@link CARRIED_MAX_BYTES} as a whole (issue 38 §2), else their size: such a
 * run goes on instead of continuing, where before its continue-as-new failed every workflow task (`PayloadsTooLarge`).
 * Each part already sheds what it can (carryState); what cannot be shed is the thread's own (queued inputs, metadata),
 * and the queue shrinks as slices take it. Deciding not to continue changes a command, but only where the command
 * before could never be carried out: a history whose continue-as-new went through was under the server's limit.
 */
export function nextRunWithin(args: ThreadWorkflowArgs, st: ThreadState): ThreadWorkflowArgs | { overBytes: number } {
  const next = nextRunArgs(args, st);
  const bytes = jsonBytes(next);
  return bytes <= CARRIED_MAX_BYTES ? next : { overBytes: bytes };
}

/** The input ids the next run remembers (its dedup window). */
export function rememberedInputIds(opts: ThreadOptions, st: ThreadState): Set<string> {
  return new Set(lastN(st.prep.processedInputIds, opts.dedupWindow ?? DEDUP_WINDOW));
}
