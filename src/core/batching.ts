/**
 * Bounds on what one slice takes from a thread's inbox and on what one workflow run carries into the next. Temporal
 * refuses a payload over 2 MB (an activity's input, a continue-as-new's arguments) by failing the workflow task, again
 * and again; a flood of inputs into a busy thread must never build one. Pure: the thread workflow uses it.
 */
import type { InputMessage } from './types';

export interface BatchLimits {
  /** Inputs one slice takes at most. */
  maxInputs: number;
  /** Serialized characters one slice takes at most (an input larger than this goes alone). */
  maxChars: number;
}

/** Well under Temporal's 2 MB payload limit, and enough that a slice drains a flood faster than it builds. */
export const SLICE_BATCH_LIMITS: BatchLimits = { maxInputs: 1000, maxChars: 512 * 1024 };

/** A run continues-as-new only while what it carries (queued inputs and items) stays under this. */
export const CARRY_MAX_CHARS = 512 * 1024;

/** Serialized size of JSON values, in UTF-16 characters (close enough to bytes for a bound with margin). */
export function serializedChars(values: readonly unknown[]): number {
  let n = 0;
  for (const v of values) n += JSON.stringify(v)?.length ?? 0;
  return n;
}

/** Removes and returns the longest prefix of `inbox` within `limits`; at least one input when the inbox has any. */
export function takeBatch(inbox: InputMessage[], limits: BatchLimits = SLICE_BATCH_LIMITS): InputMessage[] {
  let chars = 0;
  let n = 0;
  while (n < inbox.length && n < limits.maxInputs) {
    const size = JSON.stringify(inbox[n]).length;
    if (n > 0 && chars + size > limits.maxChars) break;
    chars += size;
    n += 1;
  }
  return inbox.splice(0, n);
}
