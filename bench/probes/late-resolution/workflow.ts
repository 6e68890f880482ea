/**
 * The smallest workflow that shows decision 79's SDK behaviour: a local activity, then a patch asked for the first time
 * right after its result, in a loop. Not agent code: a probe of Temporal's TypeScript SDK alone. With `patch` false it
 * asks no patch: a local activity and a timer, which replays however late the result came unless an update was
 * accepted in the late task (decision 80).
 */
import { defineQuery, defineUpdate, patched, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';

const { quick } = proxyLocalActivities<{ quick(fail: boolean): Promise<number> }>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 1 },
});

export const patchesQuery = defineQuery<number>('patches');
export const pingUpdate = defineUpdate<number>('ping');

export async function patchAfterLocalActivity(iterations: number, fail: boolean, patch = true): Promise<number> {
  let patches = 0;
  setHandler(patchesQuery, () => patches);
  // An accepted update is an event among the task's commands: decision 80's variant.
  setHandler(pingUpdate, () => patches);
  for (let i = 0; i < iterations; i++) {
    try {
      await quick(fail);
    } catch {
      // A refusal, as a throttled slice's: what follows it is the same either way.
    }
    if (patch && patched(`probe-${i}`)) patches++;
    await sleep(5);
  }
  return patches;
}
