/**
 * The unit tier's setup: no Temporal server and no PostgreSQL, only a scratch directory and the thread workflows
 * bundled once (the replay gate replays recorded histories against that bundle). `temporalAddress` and `postgresUrl`
 * are not provided: a unit test that asks for them belongs in the system tier.
 */
import type { ProvidedContext } from 'vitest';
import { runScratch } from '../infra/scratch';
import { bundleThreadWorkflows } from './global-setup';

interface SetupContext {
  provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]): void;
}

export default async function setup(project: SetupContext): Promise<() => void> {
  const scratch = runScratch('infinity-unit-');
  project.provide('scratchDir', scratch.dir);
  project.provide('workflowBundlePath', await bundleThreadWorkflows(scratch.dir));
  return () => scratch.remove();
}
