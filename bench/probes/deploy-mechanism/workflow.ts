/**
 * A parked thread, reduced to what a deploy touches (bench/probes/deploy-mechanism.ts): it waits for input, runs each
 * as a local activity (a slice), and continues as new — on `migrate` at once (the window's sweep), and, in the pinned
 * mode, as soon as Temporal says its deployment's current version moved (`targetWorkerDeploymentVersionChanged`),
 * asking the next run to start on the new version (`initialVersioningBehavior: 'AUTO_UPGRADE'`).
 */
import {
  condition,
  continueAsNew,
  defineSignal,
  makeContinueAsNewFunc,
  patched,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';

export const wake = defineSignal('wake');
export const migrate = defineSignal('migrate');

const { slice } = proxyLocalActivities<{ slice(n: number): Promise<number> }>({ startToCloseTimeout: '10s' });

export interface ParkedArgs {
  /** `pinned`: upgrade on continue-as-new when the deployment's version moves. `patched`: one patch per run. */
  mode: 'pinned' | 'patched';
  n?: number;
  /** Inputs the previous run had not taken (a thread's inbox is carried the same way). */
  inputs?: number;
}

export async function parkedThread(args: ParkedArgs): Promise<void> {
  let n = args.n ?? 0;
  let inputs = args.inputs ?? 0;
  let migrating = false;
  setHandler(wake, () => void (inputs += 1));
  setHandler(migrate, () => void (migrating = true));
  const moved = () => args.mode === 'pinned' && workflowInfo().targetWorkerDeploymentVersionChanged === true;
  for (;;) {
    await condition(() => inputs > 0 || migrating || moved());
    if (migrating || moved()) {
      const next = { ...args, n, inputs };
      if (args.mode === 'pinned')
        await makeContinueAsNewFunc<typeof parkedThread>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(next);
      else await continueAsNew<typeof parkedThread>(next);
    }
    inputs -= 1;
    // Today's rules: one patch asked before the first slice of a run.
    if (args.mode === 'patched') patched('probe-release');
    n = await slice(n);
  }
}
