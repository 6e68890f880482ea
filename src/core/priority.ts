/**
 * Task priority and fairness of threads (Temporal's task queue Priority and Fairness). A root thread is started with
 * a priority key and a fairness key; its slices (activities) and its workflow tasks carry them, and children inherit
 * the fairness key, so one agent tree shares one fair share of the task queue.
 */

/** Structurally Temporal's `Priority` (`@temporalio/common`), kept here so the core has no SDK import. */
export interface ThreadPriority {
  /** 1 (first) to 5 (last); Temporal's default is 3. */
  priorityKey?: number;
  /** Dispatch is shared between keys in proportion to their weights (at most 64 bytes). */
  fairnessKey?: string;
  /** A key's share, 0.001 to 1000. @default 1 */
  fairnessWeight?: number;
}

/** Priority keys by what a thread does: a user waits on a root thread; children and event handlers are background. */
export const DEFAULT_PRIORITY_KEYS = {
  root: 2,
  background: 4,
} as const;

export const MAX_PRIORITY_KEY = 5;
export const MAX_FAIRNESS_KEY_BYTES = 64;

/** What is wrong with a priority a caller gave, or undefined. */
export function priorityViolation(p: ThreadPriority): string | undefined {
  if (
    p.priorityKey !== undefined &&
    !(Number.isInteger(p.priorityKey) && p.priorityKey >= 1 && p.priorityKey <= MAX_PRIORITY_KEY)
  ) {
    return `priority must be a whole number from 1 (first) to ${MAX_PRIORITY_KEY}, got ${String(p.priorityKey)}`;
  }
  if (
    p.fairnessKey !== undefined &&
    (p.fairnessKey === '' || new TextEncoder().encode(p.fairnessKey).length > MAX_FAIRNESS_KEY_BYTES)
  ) {
    return `fairness key must be 1 to ${MAX_FAIRNESS_KEY_BYTES} bytes`;
  }
  if (
    p.fairnessWeight !== undefined &&
    !(Number.isFinite(p.fairnessWeight) && p.fairnessWeight >= 0.001 && p.fairnessWeight <= 1000)
  ) {
    return `fairness weight must be from 0.001 to 1000, got ${String(p.fairnessWeight)}`;
  }
  return undefined;
}

/**
 * The priority a root thread starts with: the given fields, else priority key 2 and the thread id as fairness key
 * (cut to 64 bytes: ids that share their first 64 bytes share a share, which is harmless).
 */
export function rootPriority(threadId: string, given: ThreadPriority = {}): ThreadPriority {
  return {
    priorityKey: given.priorityKey ?? DEFAULT_PRIORITY_KEYS.root,
    fairnessKey: given.fairnessKey ?? truncateBytes(threadId, MAX_FAIRNESS_KEY_BYTES),
    ...(given.fairnessWeight !== undefined && { fairnessWeight: given.fairnessWeight }),
  };
}

/**
 * The priority key of a child, event or compaction thread: background (4), and never ahead of the thread that
 * started it (a parent at 5 has children at 5). The fairness key and weight are inherited.
 */
export function childPriorityKey(parentKey: number | undefined): number {
  return Math.min(MAX_PRIORITY_KEY, Math.max(DEFAULT_PRIORITY_KEYS.background, parentKey ?? 3));
}

function truncateBytes(s: string, max: number): string {
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= max) return s;
  // Cut at a character boundary: drop a partial UTF-8 sequence at the end.
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}
