/**
 * When a thread's run continues-as-new, and what the next run starts from (decision 45). The decision is taken after
 * every slice; the loop itself awaits the open handlers (0.1) and `continueAsNew`, so the command comes at the same
 * point, and in the same microtask order, as when the decision was inline.
 */
import { workflowInfo } from '@temporalio/workflow';
import { CARRY_MAX_CHARS, serializedChars } from '../core/batching';
import { CARRIED_MAX_BYTES, jsonBytes } from '../core/state-bounds';
import { v02 } from './patches';
import type { ThreadOptions, ThreadWorkflowArgs } from './contract';
import { carryState, DEDUP_WINDOW, lastN, type ThreadState } from './state';

/**
 * `stay`: this run goes on. `now`: continue-as-new at once, abandoning open waits (0.2). `after-handlers`: wait for
 * every open handler to finish first (0.1).
 */
export type ContinueAsNewDecision = 'stay' | 'now' | 'after-handlers';

/**
 * Whether the run continues-as-new after this slice. Asks `v02()` once, every time (as the loop always did), and
 * `idle()` only under 0.1's rules once Temporal suggests it.
 */
export function continueAsNewDecision(
  opts: ThreadOptions,
  st: ThreadState,
  idle: () => boolean,
): ContinueAsNewDecision {
  const info = workflowInfo();
  // 0.1 waited for an idle moment, which a flooded thread never has, and Temporal terminated it at its history limit.
  // 0.2 continues between any two slices once the run is long, if what it carries stays small.
  const rules02 = v02();
  const due = rules02
    ? (info.continueAsNewSuggested || info.historyLength >= (opts.maxRunEvents ?? 2000)) &&
      serializedChars([st.inbox, st.prep.deferred, st.carry, st.prefix]) <= CARRY_MAX_CHARS
    : info.continueAsNewSuggested && idle();
  if (!due) return 'stay';
  // 0.1 waited for open waits to finish, which under load they never do; 0.2 abandons them (see `waitForIdle`).
  return rules02 ? 'now' : 'after-handlers';
}

/** The next run's arguments: this run's, without the seed and first input (used up), with the state it carries. */
export function nextRunArgs(args: ThreadWorkflowArgs, st: ThreadState): ThreadWorkflowArgs {
  return {
    ...args,
    seed: undefined,
    firstInput: undefined,
    firstInputSignal: undefined,
    carried: carryState(st, args.options?.dedupWindow ?? DEDUP_WINDOW),
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
