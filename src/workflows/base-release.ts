/**
 * The rules a run follows without asking `patched()`.
 *
 * - **0.11's rules (decision 79), the default for every run 0.11 code starts.** The client that starts a thread, and the
 *   thread that spawns a child or continues as new, put `rules: '0.11'` in the run's start input; a run started
 *   without it (by hand, or by an older client) asks one patch, `infinity-v0.11`, first thing in its first workflow
 *   task. Either way every patch of 0.2 to 0.10 is then answered without asking. A `patched()` first asked after a
 *   local activity's result does not replay when Temporal's worker delivered that result a workflow task late, which
 *   it does when a query arrives while the local activity runs (SDK 1.24; decision 79 has the measurement): the marker
 *   sits a task later live than the replay looks for it. A run that asks nothing after its start is immune.
 * - **0.5's rules (`ThreadOptions.baseRelease: '0.5'`, decision 66).** The thread follows 0.2 to 0.5 without asking, and
 *   asks 0.6 and later on their paths as before, so workers of 0.6 to 0.10 can still serve it.
 * - Neither (a run 0.10 or older started, replayed here): every patch is asked where it always was, so its history
 *   replays as it ran.
 *
 * Workflow code: the state lives in this module, and the SDK gives every workflow its own copy of the bundle's modules
 * (its own module cache, also with a reused V8 context), so one thread's setting never reaches another's.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import { CURRENT_RULES, type ThreadWorkflowArgs } from './contract';

/** Release 0.11's patch: asked once, first thing, by a run whose start input does not name its rules. */
export const V011 = 'infinity-v0.11';

let base: '0.5' | undefined;
let current = false;

/**
 * Called once, first thing in the workflow (also on replay, from the same input), before anything else can ask a patch
 * or schedule a local activity.
 */
export function adoptRules(args: ThreadWorkflowArgs): void {
  base = args.options?.baseRelease;
  // A thread that chose 0.5's rules keeps them: it asks 0.6 and later as before (decision 66's compatibility).
  current = base === undefined && (args.rules === CURRENT_RULES || patched(V011));
}

/** The rules the runs this one starts follow (a child, the next run): the current ones, unless 0.5's were chosen. */
export function rulesForNewRuns(): Pick<ThreadWorkflowArgs, 'rules'> {
  return base === undefined ? { rules: CURRENT_RULES } : {};
}

/** Whether this run follows 0.11's rules: every patch of 0.2 to 0.10 holds without asking. */
export const onCurrentRules = (): boolean => current;

/**
 * Whether this run follows release 0.5's rules (0.2 to 0.5) without asking: true only for a thread whose start input
 * says so. The option is read from the start input, which is in the history, so a replay decides the same way.
 */
export const onRulesOf05 = (): boolean => base === '0.5';

/**
 * A patch that holds without asking on this run's rules: true, recording nothing, except that while replaying it still
 * asks `patched(id)` and ignores the answer. The SDK (1.24) fails a replay that meets a patch marker no code asks for
 * (TMPRL1100, "Non-deprecated patch marker encountered ... but there is no corresponding change command";
 * test/patch-option.test.ts), and such a run has markers if an older worker, which ignores its rules, took a task of
 * it. Asked while replaying, a marker in the history is matched where the older code recorded it (the call sites are
 * the same), and without one `patched()` records nothing during replay; live, nothing is asked.
 */
export function impliedPatch(id: string): boolean {
  if (workflowInfo().unsafe.isReplaying) patched(id);
  return true;
}
