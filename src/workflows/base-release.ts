/**
 * The rules a run follows without asking `patched()`.
 *
 * - **0.11's rules (decision 79), for every run a 0.11 worker starts.** The run asks one patch, `infinity-v0.11`,
 *   before its first other patch question and before its first local activity; when it holds, every patch of 0.2 to
 *   0.10 holds without asking. A run that needs neither (one that continues as new while idle) asks nothing, so an
 *   older worker can still serve it. A `patched()` first asked after a local activity's result does not replay when
 *   Temporal's worker delivered that result a workflow task late, which it does when a query arrives while the local
 *   activity runs (SDK 1.23 and 1.24; decisions 79 and 81): the marker sits a task later live than the replay looks
 *   for it. A run that asks nothing after its first step is immune. The decision travels as a marker, not as a field of
 *   the start input, because it must record which worker ran the run's first task: a run an older worker started
 *   follows that worker's rules, whoever started it.
 * - **0.5's rules (`ThreadOptions.baseRelease: '0.5'`, decision 66).** The thread follows 0.2 to 0.5 without asking, and
 *   asks 0.6 and later on their paths as before (no 0.11 marker), so workers of 0.6 to 0.10 can still serve it.
 * - Neither (a run of 0.10 or older, replayed here): every patch is asked where it always was, so its history replays
 *   as it ran.
 *
 * Workflow code: the state lives in this module, and the SDK gives every workflow its own copy of the bundle's modules
 * (its own module cache, also with a reused V8 context), so one thread's setting never reaches another's.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import type { ThreadOptions } from './contract';

/**
 * Release 0.11's patch: asked once, before the first other patch and the first local activity, by every run not on
 * 0.5's rules.
 */
export const V011 = 'infinity-v0.11';

let base: ThreadOptions['baseRelease'];
let current: boolean | undefined;

/** Called once, first thing in the workflow (also on replay, from the same input). */
export function adoptRules(options: ThreadOptions | undefined): void {
  base = options?.baseRelease;
  current = undefined;
}

/**
 * Decides this run's rules, once: before its first patch question and before its first local activity, so a local
 * activity's result can never come before a patch is asked. A thread that chose 0.5's rules keeps them: it asks 0.6
 * and later as before (decision 66's compatibility).
 */
export function decideRules(): void {
  current ??= base === undefined && patched(V011);
}

/** Whether this run follows 0.11's rules: every patch of 0.2 to 0.10 holds without asking. Decides them first. */
export function onCurrentRules(): boolean {
  decideRules();
  return current === true;
}

/**
 * Whether this run follows release 0.5's rules (0.2 to 0.5) without asking: true only for a thread whose start input
 * says so. The option is read from the start input, which is in the history, so a replay decides the same way.
 */
export const onRulesOf05 = (): boolean => base === '0.5';

/**
 * A patch that holds without asking on this run's rules: true, recording nothing, except that while replaying it still
 * asks `patched(id)` and ignores the answer. The SDK fails a replay that meets a patch marker no code asks for
 * (TMPRL1100, "Non-deprecated patch marker encountered ... but there is no corresponding change command";
 * test/patch-option.test.ts), and a thread on 0.5's rules has such markers if a worker older than 0.6, which ignores the
 * option, took a task of it (a run on 0.11's rules never has: no older worker can replay its marker). Asked while
 * replaying, a marker in the history is matched where the older code recorded it (the call sites are
 * the same), and without one `patched()` records nothing during replay; live, nothing is asked.
 */
export function impliedPatch(id: string): boolean {
  if (workflowInfo().unsafe.isReplaying) patched(id);
  return true;
}
