/**
 * Resource targets (decision 64): the worker takes a new workflow task only while the machine's CPU and memory stay
 * under their targets, through Temporal's resource-based slot supplier. A slice runs inside its workflow task, so
 * holding tasks back holds slices back; what waits stays in Temporal's queue, where task priority puts a user's turn
 * first, and the headroom left is what lets that turn run at the speed it would alone.
 */
import type { WorkerOptions, WorkerTuner } from '@temporalio/worker';
import { MIN_WORKFLOW_SLOTS } from './workflow-slots';

/** What {@link AgentWorkerOptions} says about resources (fractions of the machine, 0–1). */
export interface ResourceTargets {
  /** Machine CPU (all processes) above which no new workflow task is taken. */
  cpu: number;
  /** Machine memory above which no new workflow task is taken. @default 0.9 */
  memory?: number;
}

/** Memory above which a worker with only a CPU target stops taking tasks: short of swapping, not of caches. */
export const DEFAULT_MEMORY_TARGET = 0.9;

const SDK_DEFAULT_SLOTS = 100;

/** A target must be a fraction in (0, 1]; anything else is the caller's mistake, said before the worker starts. */
function checked(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0 || value > 1)
    throw new TypeError(`${name} must be a fraction of the machine in (0, 1], got ${value}`);
  return value;
}

/**
 * The worker options for `targets`: a tuner whose workflow task slots (at most `maxWorkflowSlots`) follow the
 * targets, with activity, local activity and Nexus slots fixed at the sizes `options` asked for (Temporal's
 * defaults otherwise). The SDK refuses a tuner beside `maxConcurrent*` options, so those are folded into it and
 * removed from the options returned.
 */
export function withResourceTargets(
  targets: ResourceTargets,
  maxWorkflowSlots: number,
  options: Partial<WorkerOptions> = {},
): Partial<WorkerOptions> {
  if (options.tuner) throw new TypeError('give resource targets or a tuner, not both');
  const tunerOptions = {
    targetCpuUsage: checked('the CPU target', targets.cpu),
    targetMemoryUsage: checked('the memory target', targets.memory ?? DEFAULT_MEMORY_TARGET),
  };
  const {
    maxConcurrentWorkflowTaskExecutions,
    maxConcurrentActivityTaskExecutions,
    maxConcurrentLocalActivityExecutions,
    maxConcurrentNexusTaskExecutions,
    ...rest
  } = options;
  const fixed = (n: number | undefined) => ({ type: 'fixed-size' as const, numSlots: n ?? SDK_DEFAULT_SLOTS });
  const tuner: WorkerTuner = {
    workflowTaskSlotSupplier: {
      type: 'resource-based',
      minimumSlots: MIN_WORKFLOW_SLOTS,
      maximumSlots: Math.max(MIN_WORKFLOW_SLOTS, maxConcurrentWorkflowTaskExecutions ?? maxWorkflowSlots),
      tunerOptions,
    },
    activityTaskSlotSupplier: fixed(maxConcurrentActivityTaskExecutions),
    localActivityTaskSlotSupplier: fixed(maxConcurrentLocalActivityExecutions),
    nexusTaskSlotSupplier: fixed(maxConcurrentNexusTaskExecutions),
  };
  return { ...rest, tuner };
}
