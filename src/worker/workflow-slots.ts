/**
 * How many workflow tasks a worker holds at once, against the size of its workflow cache (decisions 60 and 74).
 *
 * A slice's first part runs as a local activity inside its thread's workflow task, so a thread holding a workflow task
 * is busy in the cache. When a task arrives for a thread the cache does not hold and the cache is full, Temporal's
 * worker (SDK 1.24's core) makes room by evicting the least recently used thread, whether or not its workflow task is
 * still running: the running slice is then abandoned (nothing committed), its workflow task times out after 10 s and
 * runs again, and a slice that had committed dispatches its tool call a second time. A busy thread is the least
 * recently used one only when every idle thread in the cache was used after it started; keeping at least as many idle
 * entries as slots, so at most half the cache busy, kept that from happening in every run measured (docs/performance.md,
 * "Slots and the workflow cache").
 */
import type { WorkerOptions } from '@temporalio/worker';

/**
 * Workflow tasks a worker runs at once unless told otherwise (and at most half its workflow cache). Measured with the
 * benchmark's priorities phase (decision 60): at 100 a user's turn under a flood waited p50 881 ms, at 16 297 ms, at 4
 * 173 ms, while throughput without a flood stayed within noise at 16 and fell by a fifth to a half at 4.
 */
export const DEFAULT_WORKFLOW_TASK_SLOTS = 16;

/** With a cache, a worker polls its sticky queue and the shared one, each holding a slot; Temporal's minimum too. */
export const MIN_WORKFLOW_SLOTS = 2;
/** {@link AgentWorkerOptions.maxCachedWorkflows}'s default. */
const DEFAULT_CACHED_WORKFLOWS = 100;
/** What Temporal's resource-based tuner allows for workflow tasks unless told otherwise. */
const SDK_RESOURCE_BASED_MAX = 1000;

/** The workflow cache a worker gets: `workerOptions.maxCachedWorkflows` wins over the runtime's own option. */
export function workflowCacheOf(options: {
  maxCachedWorkflows?: number;
  workerOptions?: Partial<WorkerOptions>;
}): number {
  return options.workerOptions?.maxCachedWorkflows ?? options.maxCachedWorkflows ?? DEFAULT_CACHED_WORKFLOWS;
}

/** The most workflow tasks a worker with a cache of `cached` workflows should hold at once (decision 74). */
export function maxWorkflowSlotsFor(cached: number): number {
  return cached > 0 ? Math.max(MIN_WORKFLOW_SLOTS, Math.floor(cached / 2)) : Number.POSITIVE_INFINITY;
}

/** The slots a worker takes when its options do not say: {@link DEFAULT_WORKFLOW_TASK_SLOTS}, at most half the cache. */
export function defaultWorkflowSlots(cached: number): number {
  return Math.min(DEFAULT_WORKFLOW_TASK_SLOTS, maxWorkflowSlotsFor(cached));
}

/** The most workflow tasks `options` lets a worker hold, where they say it: a slot count or a tuner's maximum. */
function configuredSlots(options: Partial<WorkerOptions>): { slots: number; option: string } | undefined {
  if (options.maxConcurrentWorkflowTaskExecutions !== undefined)
    return { slots: options.maxConcurrentWorkflowTaskExecutions, option: 'maxConcurrentWorkflowTaskExecutions' };
  const tuner = options.tuner;
  if (!tuner) return undefined;
  if ('workflowTaskSlotSupplier' in tuner) {
    const supplier = tuner.workflowTaskSlotSupplier;
    if (supplier.type === 'fixed-size')
      return { slots: supplier.numSlots, option: 'tuner.workflowTaskSlotSupplier.numSlots' };
    if (supplier.type === 'resource-based')
      return {
        slots: supplier.maximumSlots ?? SDK_RESOURCE_BASED_MAX,
        option: 'tuner.workflowTaskSlotSupplier.maximumSlots',
      };
    return undefined; // A custom supplier decides at run time.
  }
  return {
    slots: tuner.workflowTaskSlotOptions?.maximumSlots ?? SDK_RESOURCE_BASED_MAX,
    option: 'tuner.workflowTaskSlotOptions.maximumSlots',
  };
}

/**
 * Throws a `TypeError` when `options` let the worker hold more workflow tasks than half its cache of `cached`
 * workflows: under a burst of more active threads than the cache holds, that abandons running slices (see above).
 */
export function checkWorkflowSlots(options: Partial<WorkerOptions>, cached: number): void {
  const given = configuredSlots(options);
  const max = maxWorkflowSlotsFor(cached);
  if (!given || given.slots <= max) return;
  throw new TypeError(
    `${given.option} (${given.slots}) is more than half of maxCachedWorkflows (${cached}): when more threads are ` +
      'active than the cache holds, Temporal evicts the least recently used one even while its slice runs, which ' +
      'abandons the slice (retried after a 10 s workflow task timeout, its tool call possibly dispatched twice). ' +
      `Raise maxCachedWorkflows to at least ${given.slots * 2}, or hold at most ${max} workflow tasks (decision 74).`,
  );
}
