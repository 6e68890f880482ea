/**
 * Readers of start arguments and carried state that a hand-made start may fill with anything (`temporal workflow start
 * --input ...`). Each returns a well-formed value unchanged, so every run this code or an older release started reads
 * exactly as before (and replays: no command changes); in place of a value the run could not have used, it returns
 * the empty one, where before the run threw at that value and failed every workflow task.
 */
import type { InputMessage, StoredItem } from '../core/types';
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

/** A string, else absent (a tenant or user id goes into the store's queries as a bound parameter). */
export function text(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined;
}

/** A plain object, else absent. */
export function record<T extends object>(x: T | undefined): T | undefined {
  return isObject(x) ? x : undefined;
}
