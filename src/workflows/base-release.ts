/**
 * The release whose rules a thread follows without asking `patched()` (`ThreadOptions.baseRelease`, decision 66).
 * Workflow code: the state lives in this module, and the SDK gives every workflow its own copy of the bundle's modules
 * (its own module cache, also with a reused V8 context), so one thread's setting never reaches another's.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import type { ThreadOptions } from './contract';

let base: ThreadOptions['baseRelease'];

/** Called once, first thing in the workflow, with the start input's options (also on replay, from the same input). */
export function adoptBaseRelease(options: ThreadOptions | undefined): void {
  base = options?.baseRelease;
}

/**
 * Whether this run follows release 0.5's rules (0.2 to 0.5) without asking: true only for a thread whose start input
 * says so. The option is read from the start input, which is in the history, so a replay decides the same way.
 */
export const onRulesOf05 = (): boolean => base === '0.5';

/**
 * A patch of 0.2 to 0.5 for a thread on their rules: true, recording nothing, except that while replaying it still asks
 * `patched(id)` and ignores the answer. The SDK (1.24) fails a replay that meets a patch marker no code asks for
 * (TMPRL1100, "Non-deprecated patch marker encountered ... but there is no corresponding change command";
 * test/patch-option.test.ts), and a thread started with the option has such markers if a worker older than 0.6 took a
 * task of it. Asked while replaying, a marker in the history is matched where the older code recorded it (the call
 * sites are the same), and without one `patched()` records nothing during replay; live, nothing is asked.
 */
export function onRules05Patch(id: string): boolean {
  if (workflowInfo().unsafe.isReplaying) patched(id);
  return true;
}
