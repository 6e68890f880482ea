/** `worker`: serve threads from any Temporal cluster (the global --address, --namespace, --tls options name it). */
import type { Command } from 'commander';
import { type DeploymentFlags, deploymentOptions } from '../deployment';
import type { Out } from '../format';
import { workerAction } from '../lazy-actions';
import { serveOptions, type ServeOptions } from '../serve-flags';

export function registerWorker(program: Command, out: Out): void {
  deploymentOptions(serveOptions(program.command('worker')))
    .description('serve threads from any Temporal cluster (see the global --address, --namespace, --tls options)')
    // What it runs on (the Temporal worker, the models, the tool servers) loads when it runs: actions/worker.ts.
    .action(async (opts: ServeOptions & DeploymentFlags, cmd: Command) => workerAction().runWorker(opts, cmd, out));
}
