/**
 * Workflow task slots against the workflow cache (decision 74): the default is 16 and at most half the cache, and a
 * worker's options that let it hold more than half its cache, as a slot count or a tuner's maximum, are refused.
 */
import { describe, expect, it } from 'vitest';
import { checkWorkflowSlots, defaultWorkflowSlots, maxWorkflowSlotsFor } from '../../src/worker/workflow-slots';

const tunerOptions = { targetCpuUsage: 0.7, targetMemoryUsage: 0.9 };
const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });

describe('workflow task slots against the cache', () => {
  it('defaults to 16, at most half the cache, at least the two pollers a cache needs', () => {
    expect([0, 2, 3, 8, 20, 32, 33, 100, 1000].map(defaultWorkflowSlots)).toEqual([16, 2, 2, 4, 10, 16, 16, 16, 16]);
    expect(maxWorkflowSlotsFor(100)).toBe(50);
    expect(maxWorkflowSlotsFor(0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('accepts up to half the cache, and any number without a cache', () => {
    expect(() => checkWorkflowSlots({ maxConcurrentWorkflowTaskExecutions: 50 }, 100)).not.toThrow();
    expect(() => checkWorkflowSlots({ maxConcurrentWorkflowTaskExecutions: 2 }, 2)).not.toThrow();
    expect(() => checkWorkflowSlots({ maxConcurrentWorkflowTaskExecutions: 500 }, 0)).not.toThrow();
    expect(() => checkWorkflowSlots({}, 4)).not.toThrow();
  });

  it('refuses more than half the cache, naming the option and what would do', () => {
    expect(() => checkWorkflowSlots({ maxConcurrentWorkflowTaskExecutions: 51 }, 100)).toThrow(
      /maxConcurrentWorkflowTaskExecutions \(51\) is more than half of maxCachedWorkflows \(100\).*at least 102.*at most 50/,
    );
    expect(() => checkWorkflowSlots({ maxConcurrentWorkflowTaskExecutions: 100 }, 100)).toThrow(TypeError);
  });

  it('reads a tuner: a fixed or resource-based supplier, a resource-based tuner (1000 unless told), not a custom one', () => {
    const holder = (workflowTaskSlotSupplier: object) => ({
      tuner: {
        workflowTaskSlotSupplier,
        activityTaskSlotSupplier: fixed(10),
        localActivityTaskSlotSupplier: fixed(10),
        nexusTaskSlotSupplier: fixed(10),
      },
    });
    const check = (options: object, cached: number) => () => checkWorkflowSlots(options, cached);
    expect(check(holder(fixed(60)), 100)).toThrow(/tuner.workflowTaskSlotSupplier.numSlots \(60\)/);
    expect(check(holder(fixed(50)), 100)).not.toThrow();
    expect(check(holder({ type: 'resource-based', tunerOptions }), 100)).toThrow(/maximumSlots \(1000\)/);
    expect(check(holder({ type: 'resource-based', tunerOptions, maximumSlots: 40 }), 100)).not.toThrow();
    expect(check({ tuner: { tunerOptions } }, 100)).toThrow(/tuner.workflowTaskSlotOptions.maximumSlots \(1000\)/);
    expect(check({ tuner: { tunerOptions, workflowTaskSlotOptions: { maximumSlots: 8 } } }, 16)).not.toThrow();
    const custom = { type: 'custom', reserveSlot: async () => ({}), tryReserveSlot: () => ({}) };
    expect(check(holder({ ...custom, markSlotUsed() {}, releaseSlot() {} }), 100)).not.toThrow();
  });
});
