/**
 * Readers of start arguments and carried state that a hand-made start may fill with anything (`temporal workflow start
 * --input ...`). Each returns a well-formed value unchanged, so every run this code or an older release started reads
 * exactly as before (and replays: no command changes); in place of a value the run could not have used, it returns
 * the empty one, where before the run threw at that value and failed every workflow task.
 */
import type { BudgetExceeded } from '../core/budget';
import type { BudgetUpdate } from '../core/slice-protocol';
import type { DroppedInput, InputMessage, PendingCall, SetAsideBatch, StoredItem } from '../core/types';
import type { SleepTimer } from './contract';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** An array as given, else empty (`new Set(5)` throws). */
export function list<T>(x: T[] | undefined): T[] {
  return Array.isArray(x) ? x : [];
}

/** Entries for a `Map`: an array's array entries (`new Map(5)` and `new Map([5])` throw). */
export function pairs<K, V>(x: [K, V][] | undefined): [K, V][] {
  return Array.isArray(x) ? x.filter((e) => Array.isArray(e)) : [];
}

/** Queued inputs whose content is an object (the prepare rules read `content.type` of every one they take). */
export function inputs(x: InputMessage[] | undefined): InputMessage[] {
  return Array.isArray(x) ? x.filter((m) => isObject(m) && isObject(m.content)) : [];
}

/** Items to commit: objects only. */
export function items(x: StoredItem[] | undefined): StoredItem[] {
  return Array.isArray(x) ? x.filter(isObject) : [];
}

/** Sleep timers with a wake-up time a workflow timer can take (a timer of `NaN` ms throws). */
export function timers(x: SleepTimer[] | undefined): SleepTimer[] {
  return Array.isArray(x) ? x.filter((t) => isObject(t) && Number.isFinite(t.wakeAtMs)) : [];
}

/**
 * A value the store's queries can bind (a string, or a finite number, which older runs may have been given by a
 * JavaScript caller), else absent: an object is taken for named parameters and fails every slice.
 */
export function bindable<T>(x: T | undefined): T | undefined {
  return typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)) ? x : undefined;
}

/** A plain object, else absent. */
export function record<T extends object>(x: T | undefined): T | undefined {
  return isObject(x) ? x : undefined;
}

/** A count (a length, slices, runs): a non-negative integer, else 0 (a thread's length is where its next commit goes). */
export function count(x: number | undefined): number {
  return Number.isSafeInteger(x) && x! >= 0 ? x! : 0;
}

/** `true` only when it is `true` (a `closed: "yes"` closed the thread for anything truthy). */
export function flag(x: boolean | undefined): boolean {
  return x === true;
}

/** A pending call with a string id and tool name, else none. */
export function call(x: PendingCall | null | undefined): PendingCall | null {
  return isObject(x) && typeof x.id === 'string' && typeof x.name === 'string' ? x : null;
}

/** A string, else absent. */
export function text(x: string | undefined): string | undefined {
  return typeof x === 'string' ? x : undefined;
}

/** Prompts of a pending call: objects naming their call and kind. */
export function prompts<T extends { toolCallId: string; kind: string }>(x: T[] | undefined): T[] {
  return Array.isArray(x)
    ? x.filter((p) => isObject(p) && typeof p.toolCallId === 'string' && typeof p.kind === 'string')
    : [];
}

/** Set-aside batches: each with its slice id, reason and id lists (arrays of strings). */
export function setAside(x: SetAsideBatch[] | undefined): SetAsideBatch[] {
  const strings = (a: unknown): string[] => (Array.isArray(a) ? a.filter((e) => typeof e === 'string') : []);
  return Array.isArray(x)
    ? x
        .filter((b) => isObject(b) && typeof b.sliceId === 'string')
        .map((b) => ({
          sliceId: b.sliceId,
          reason: String(b.reason),
          messageIds: strings(b.messageIds),
          answeredWithError: strings(b.answeredWithError),
        }))
    : [];
}

/** Budget updates: objects with a scope; a budget that is an object or null. */
export function budgetUpdates(x: BudgetUpdate[] | undefined): BudgetUpdate[] {
  return Array.isArray(x)
    ? x.filter((u) => isObject(u) && typeof u.scope === 'string' && (u.budget === null || isObject(u.budget)))
    : [];
}

/** The limit a thread waits on: the shape `BudgetExceeded` has, else none (a thread never raised would wait forever). */
export function overBudget(x: BudgetExceeded | undefined): BudgetExceeded | undefined {
  return isObject(x) &&
    typeof x.scope === 'string' &&
    typeof x.key === 'string' &&
    typeof x.field === 'string' &&
    Number.isFinite(x.limit) &&
    Number.isFinite(x.spend)
    ? x
    : undefined;
}

/** Drop counts: finite numbers by reason. */
export function dropCounts<K extends string>(x: Partial<Record<K, number>> | undefined): Partial<Record<K, number>> {
  if (!isObject(x)) return {};
  return Object.fromEntries(Object.entries(x).filter(([, n]) => Number.isSafeInteger(n))) as Partial<Record<K, number>>;
}

/** Recent drops: objects with a reason and what they were. */
export function recentDrops(x: DroppedInput[] | undefined): DroppedInput[] {
  return Array.isArray(x)
    ? x.filter((d) => isObject(d) && typeof d.reason === 'string' && typeof d.what === 'string')
    : [];
}
