/**
 * Versioning of the thread workflow. Threads wait for weeks on tools, so every deploy runs under threads recorded with
 * older code: a change to the commands the workflow issues goes behind `patched(id)` with the id of the release that
 * made it, and the recorded histories of every release (`test/fixtures/histories/<release>/`) must still replay.
 * One id per release: one marker per run, one switch to retire with `deprecatePatch` once no thread of the release
 * before is left (docs/upgrading.md).
 *
 * A thread started with `ThreadOptions.baseRelease: '0.5'` (decision 66) follows the rules of 0.2 to 0.5 without
 * asking `patched()`: its runs record none of those markers and no `TemporalChangeVersion` upsert (two history events
 * and a visibility write fewer per run). Threads without it ask as before, so every recorded history replays as it
 * ran. 0.6 is asked as before either way: it guards this release's own changes.
 */
import { patched } from '@temporalio/workflow';
import { impliedPatch, onCurrentRules, onRulesOf05 } from './base-release';

export { V011 } from './base-release';

/**
 * Asks release `id`'s patch, unless this run's rules imply it (decision 79's 0.11 rules; decision 66's 0.5 rules for a
 * patch of 0.2 to 0.5, `upTo05`): then true without asking (base-release.ts).
 */
function ask(id: string, upTo05 = false): boolean {
  return onCurrentRules() || (upTo05 && onRulesOf05()) ? impliedPatch(id) : patched(id);
}

/**
 * Release 0.2: runs continue-as-new under load (bounded batches and carried state, not only when idle); input limits in
 * the signal handler; a slice that fails for good sets its batch aside and the thread shows `failed`.
 */
export const V02 = 'infinity-v0.2';

/** Release 0.3: a slice runs as a local activity first and is adopted by a regular activity past its budget. */
export const V03 = 'infinity-v0.3';

/**
 * Whether this run follows release 0.2's rules. False while replaying history written by 0.1 code; true from the
 * first live workflow task on (the SDK records the marker then), so a parked 0.1 thread takes the new rules when it
 * wakes.
 */
export const v02 = (): boolean => v03() || patched(V02);

/**
 * Whether this run follows release 0.3's rules (which include 0.2's). A run started by 0.3 records only this marker:
 * one marker and one `TemporalChangeVersion` upsert per run instead of two of each. Histories of 0.2 still replay
 * with 0.2's rules (their marker says so), and those of 0.1 with 0.1's.
 */
export const v03 = (): boolean => ask(V03, true);

/**
 * Release 0.4, asked only on the paths it changes and not chained into {@link v03}, so 0.3 workers still replay every
 * 0.4 run that took none of them during a rolling deploy (decision 58): a thread started by hand (a raw `temporal
 * workflow start`, without the search attributes the client sets) sets its own `ThreadKind`; a child, event or
 * compaction thread starts at a background priority (decision 60).
 */
export const V04 = 'infinity-v0.4';

export const v04 = (): boolean => ask(V04, true);

/**
 * Release 0.5, asked only on the paths it changes, as 0.4's (decision 58), so a 0.4 worker still replays every 0.5
 * run that took none of them: a root thread's `Title` search attribute written when its first user text titles it, a
 * child's written at its start, and reports and parent messages sent under their kind's signal name — each only for
 * threads whose options turn it on (`titleSearchAttribute`, `signalNames: 'by-kind'`; decision 62). On the spawn path
 * it stands for 0.4's background priority too, so a spawn records one marker (decision 51). Activity summaries,
 * a child's static summary and details, queries and current details are not commands the SDK compares on replay
 * (`test/ui-replay.test.ts` shows it): they change without a patch.
 */
export const V05 = 'infinity-v0.5';

export const v05 = (): boolean => ask(V05, true);

/**
 * Release 0.6, asked only on the path it changes, as 0.4's and 0.5's (decision 58): an input that the complete input
 * checks refuse but release 0.5's took (a prompt whose `choices` is not an array, a display segment of another shape,
 * an unknown field; issue 26) is dropped as malformed. Asked only for such an input, never for a well-formed one, so a
 * thread that receives none records no marker; history recorded before, where 0.5 took such an input, replays as it
 * ran. Also asked only on its path (decision 67): a turn that may run locally and finds several inputs queued takes
 * them all into one slice (the original runtime prepares them together), where 0.3 took the first alone; before that
 * slice it asks the store whether a failed attempt of this workflow task already committed the slice, and with which
 * inputs (a local activity: one more marker), so every attempt takes the same ones; an input a `deliver` update
 * admitted in the same workflow task is left out of a local slice, and a batch that starts with one runs as a regular
 * activity.
 */
export const V06 = 'infinity-v0.6';

export const v06 = (): boolean => ask(V06);

/**
 * Release 0.7, asked only on the path it changes: a run that continues-as-new while it holds acknowledged deliveries
 * hands them to the next run in its carried state (`acks`), so an update the server delivers to the next run again
 * (temporalio/temporal issue 6375) is answered as it was, not as a duplicate. Asked only when there is one to hand
 * over; a thread that took none records no marker.
 */
export const V07 = 'infinity-v0.7';

export const v07 = (): boolean => ask(V07);

/**
 * Release 0.8, asked only on the path it changes: a `rewind` control input (issue 28 §2), which 0.7 dropped as
 * malformed, runs the `rewindThread` activity and drops the state the rewind archived. A thread that is never rewound
 * records no marker.
 */
export const V08 = 'infinity-v0.8';

export const v08 = (): boolean => ask(V08);

/**
 * Release 0.10, asked only on the path it changes: a thread ended by Temporal's own cancel (the UI, `temporal workflow
 * cancel`, a rewind that archives its spawn) asks every child it spawned to cancel too, so a cancelled tree stops
 * spending (decision 76). Asked only when a cancelled thread has children; a thread never cancelled records no marker.
 */
export const V010 = 'infinity-v0.10';

export const v010 = (): boolean => ask(V010);

/**
 * Release 0.12, asked only on the path it changes, and never implied by 0.11's rules (base-release.ts implies only the
 * patches before it): a `migrate` input (issue 39), which 0.11 dropped as malformed, makes the run continue as new at
 * its next pause between slices. A thread that is never migrated records no marker.
 */
export const V012 = 'infinity-v0.12';

export const v012 = (): boolean => patched(V012);
