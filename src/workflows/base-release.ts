/**
 * The rules a run follows without asking `patched()`.
 *
 * - **0.11's rules (decision 79), for every run.** A run asks one patch, `infinity-v0.11`, before its first other patch
 *   question and before its first local activity. A run that needs neither (one that continues as new while idle)
 *   asks nothing. A `patched()` first asked after a local activity's result does not replay when Temporal's worker
 *   delivered that result a workflow task late, which it does when a query arrives while the local activity runs (SDK
 *   1.23 and 1.24; decisions 79 and 81): the marker sits a task later live than the replay looks for it. A run that
 *   asks nothing after its first step is immune. The question is asked for its marker, not its answer: since release
 *   0.13 every patch of 0.2 to 0.10 holds for every run (decision 85: their old branches are gone, and the window
 *   0.11–0.13 holds no run that took one), but a run that records the 0.11 marker stays replayable by 0.11 and 0.12
 *   workers, which take it as their signal that 0.2 to 0.10 hold. Asked at the same point as ever, so the markers that
 *   0.11 and 0.12 recorded are matched where they are.
 * - **`ThreadOptions.baseRelease: '0.5'` (decision 66).** The run does not ask `infinity-v0.11` (0.11 and 0.12 asked
 *   0.6 and later on their paths instead, and those markers still match: `impliedPatch`). Nothing else: on this
 *   release the option changes no rule.
 *
 * Runs of 0.10 or older (no 0.11 marker, and the old branches they may have taken) are outside the window: their
 * replay stops at their first patch question ({@link RunOutsideWindow}) instead of going on by luck; release 0.12
 * moves them (`migrate`, docs/upgrading.md).
 *
 * Workflow code: the state lives in this module, and the SDK gives every workflow its own copy of the bundle's modules
 * (its own module cache, also with a reused V8 context), so one thread's setting never reaches another's.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import type { ThreadOptions } from './contract';

/**
 * Release 0.11's patch: asked once, before the first other patch question and the first local activity, by every run
 * not on 0.5's rules.
 */
export const V011 = 'infinity-v0.11';

let base: ThreadOptions['baseRelease'];
let decided = false;

/** Called once, first thing in the workflow (also on replay, from the same input). */
export function adoptRules(options: ThreadOptions | undefined): void {
  base = options?.baseRelease;
  decided = false;
}

/**
 * Asks 0.11's patch, once: before this run's first patch question and before its first local activity, so a local
 * activity's result can never come before a patch is asked, and at the point where 0.11 and 0.12 asked it. Asked at
 * most once a run: on a replay without the marker the SDK answers false, and asked again live it would record a
 * marker at another point.
 */
export function decideRules(): void {
  if (decided) return;
  decided = true;
  if (
    base === undefined &&
    !patched(V011) &&
    workflowInfo().unsafe.isReplaying &&
    OLD_PATCHES.some((id) => patched(id))
  )
    throw new RunOutsideWindow();
}

/**
 * The patches that runs of 0.2 to 0.10 asked where this run asks 0.11's. One of them at this point proves an old run;
 * asking them while replaying records nothing. A history with none of them here is not refused: a run of 0.1 (which
 * asked no patch) or one written by another build fails where its commands differ, as a nondeterminism error.
 */
const OLD_PATCHES = [
  'infinity-v0.3',
  'infinity-v0.2',
  'infinity-v0.4',
  'infinity-v0.5',
  'infinity-v0.6',
  'infinity-v0.7',
  'infinity-v0.8',
  'infinity-v0.10',
];

/**
 * A run this release must not replay (decision 85): at its first patch question its history holds a patch of 0.2 to
 * 0.10 and not 0.11's, so release 0.10 or older wrote it, and it may have taken branches this release no longer has. Replaying it
 * on the new rules could go on with another state instead of failing. Thrown in workflow code, it fails the workflow
 * task (Temporal retries it with backoff): the thread shows `failed` with this message, its inputs wait in its history,
 * and a release whose window holds the run (0.12) can move it. Not thrown for a thread on 0.5's rules
 * (`baseRelease`), which never asked 0.11's patch.
 */
export class RunOutsideWindow extends Error {
  constructor() {
    super(
      'this run was started by release 0.10 or older (a patch marker of 0.2-0.10, not infinity-v0.11), outside the releases this one ' +
        "replays (0.11 and later): serve its task queue with release 0.12, run 'infinity-temporal migrate', then " +
        "upgrade again (docs/upgrading.md, 'A thread too old for the running release')",
    );
    this.name = 'RunOutsideWindow';
  }
}

/**
 * A patch whose rules hold for every run (decision 85): true, recording nothing, except that while replaying it still
 * asks `patched(id)` and ignores the answer. The SDK fails a replay that meets a patch marker no code asks for
 * (TMPRL1100, "Non-deprecated patch marker encountered ... but there is no corresponding change command";
 * test/patch-option.test.ts), and a run of the window may hold such a marker: a thread on 0.5's rules that 0.11 or 0.12
 * ran through a path of 0.6 to 0.10 recorded that release's marker there. Asked while replaying, a marker in the
 * history is matched where the older code recorded it (the call sites are the same), and without one `patched()`
 * records nothing during replay; live, nothing is asked.
 */
export function impliedPatch(id: string): true {
  if (workflowInfo().unsafe.isReplaying) patched(id);
  return true;
}
