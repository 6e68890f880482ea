/**
 * Versioning of the thread workflow. Threads wait for weeks on tools, so every deploy runs under threads recorded with
 * older code: a change to the commands the workflow issues goes behind `patched(id)` with the id of the release that
 * made it, and the recorded histories of the releases in the supported window (`test/fixtures/histories/<release>/`)
 * must still replay. One id per release: one marker per run. A patch lives four releases (decision 85): real in
 * releases P and P+1, implied in P+2 and P+3 (its old branch deleted, the call kept: `impliedPatch`), then deleted
 * (docs/upgrading.md, "Retiring a patch").
 *
 * Release 0.13 (window 0.11–0.13): every run in the window took the new branch of every patch of 0.2 to 0.10 — 0.11
 * and 0.12 implied them for the runs they started (the `infinity-v0.11` marker), and a thread on `baseRelease: '0.5'`
 * asked 0.6 and later live, which answers true — so their old branches are gone and each is {@link implied}: true,
 * asked only while replaying, at the point where it always was, so a marker a window run holds is still matched. Their
 * calls go in 0.15. `infinity-v0.12` (the `migrate` path) is still a real question, implied from 0.14.
 */
import { patched } from '@temporalio/workflow';
import { decideRules, impliedPatch } from './base-release';

export { V011 } from './base-release';

/**
 * A patch of 0.3 to 0.10: 0.11's rules first (`decideRules`, which asks `infinity-v0.11` at the run's first patch
 * question, as every release since 0.11 did at this point), then the patch itself, implied.
 */
function implied(id: string): true {
  decideRules();
  return impliedPatch(id);
}

/**
 * Release 0.2's rules: continue-as-new under load (bounded batches and carried state, not only when idle); input limits
 * in the signal handler; a slice that fails for good sets its batch aside and the thread shows `failed`. Asked as
 * 0.3's (decision 51: 0.3's rules include 0.2's), which is all a run of the window ever asked here; `infinity-v0.2`
 * itself was asked only by runs that 0.3 never saw, and its id is gone.
 */
export const v02 = (): true => v03();

/** Release 0.3: a slice runs as a local activity first and is adopted by a regular activity past its budget. */
export const V03 = 'infinity-v0.3';

export const v03 = (): true => implied(V03);

/**
 * Release 0.4, on the paths it changed (decision 58): a thread started by hand (a raw `temporal workflow start`,
 * without the search attributes the client sets) sets its own `ThreadKind`; a child, event or compaction thread
 * starts at a background priority (decision 60).
 */
export const V04 = 'infinity-v0.4';

export const v04 = (): true => implied(V04);

/**
 * Release 0.5, on the paths it changed (decision 58): a root thread's `Title` search attribute written when its first
 * user text titles it, a child's written at its start, and reports and parent messages sent under their kind's signal
 * name — each only for threads whose options turn it on (`titleSearchAttribute`, `signalNames: 'by-kind'`; decision
 * 62). On the spawn path it stood for 0.4's background priority too, so a spawn asked one of them (decision 51).
 */
export const V05 = 'infinity-v0.5';

export const v05 = (): true => implied(V05);

/**
 * Release 0.6, on the paths it changed: an input that the complete input checks refuse (issue 26) is dropped as
 * malformed, asked only for such an input; a signal by kind without `threadId` or `id` gets them (issue 30); a turn
 * that may run locally and finds several inputs queued takes them all into one slice, after asking the store whether a
 * failed attempt of this workflow task already committed it (decision 67); a slice refused for budget stops the thread
 * until a raise.
 */
export const V06 = 'infinity-v0.6';

export const v06 = (): true => implied(V06);

/**
 * Release 0.7, on the paths it changed: a run that continues-as-new while it holds acknowledged deliveries hands them
 * to the next run in its carried state (`acks`; temporalio/temporal issue 6375), asked only when there is one to hand
 * over; a slice refused for provider capacity waits on a timer.
 */
export const V07 = 'infinity-v0.7';

export const v07 = (): true => implied(V07);

/** Release 0.8, on the path it changed: a `rewind` control input (issue 28 §2) runs the `rewindThread` activity. */
export const V08 = 'infinity-v0.8';

export const v08 = (): true => implied(V08);

/**
 * Release 0.10, on the path it changed: a thread ended by Temporal's own cancel asks every child it spawned to cancel
 * too (decision 76), asked only when a cancelled thread has children.
 */
export const V010 = 'infinity-v0.10';

export const v010 = (): true => implied(V010);

/**
 * Release 0.12, asked only on the path it changes, and never implied by 0.11's rules: a `migrate` input (issue 39),
 * which 0.11 dropped as malformed, makes the run continue as new at its next pause between slices. A thread that is
 * never migrated records no marker. Implied from 0.14 (its old branch, the drop, goes then), deleted in 0.16.
 */
export const V012 = 'infinity-v0.12';

export const v012 = (): boolean => patched(V012);

/**
 * Release 0.13, asked only on the paths it changes, and never implied by older rules: a `set_agent` input, which 0.12
 * dropped as malformed, moves the thread to another agent (its `AgentName` search attribute and memo follow); a slice
 * refused because no worker defines the thread's agent makes the thread wait and check again on a timer instead of
 * failing for good (issue 40); a slice refused for capacity with its thread on the key's wake-up list waits for the
 * `capacity` signal, its timer cancelled when it comes (issue 41). A thread that never meets any of them records no
 * marker.
 */
export const V013 = 'infinity-v0.13';

export const v013 = (): boolean => patched(V013);
