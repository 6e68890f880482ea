/**
 * The `worker` command's Worker Versioning flags: which build of which Temporal Worker Deployment this worker is
 * (docs/upgrading.md). `dev` has none: it runs the one build in this checkout and restarts with it, so there is no
 * older build to keep threads on.
 */
import { type Command, Option } from 'commander';
import type { WorkerDeployment } from '../worker/create-worker';
import { CliError } from './errors';

export interface DeploymentFlags {
  deploymentName?: string;
  buildId?: string;
  versioningBehavior?: 'pinned' | 'auto-upgrade';
}

export function deploymentOptions(cmd: Command): Command {
  return cmd
    .option(
      '--deployment-name <name>',
      'Worker Deployment this worker belongs to; enables Worker Versioning (env INFINITY_DEPLOYMENT_NAME)',
    )
    .option('--build-id <id>', 'this build of the deployment, e.g. a commit (env INFINITY_BUILD_ID)')
    .addOption(
      new Option(
        '--versioning-behavior <behavior>',
        "where running threads' next tasks go once another build is current (default auto-upgrade)",
      ).choices(['auto-upgrade', 'pinned']),
    );
}

/** The deployment the flags (or their environment variables) name; undefined for an unversioned worker. */
export function deploymentOf(
  flags: DeploymentFlags,
  env: NodeJS.ProcessEnv = process.env,
): WorkerDeployment | undefined {
  const name = flags.deploymentName ?? env.INFINITY_DEPLOYMENT_NAME;
  const buildId = flags.buildId ?? env.INFINITY_BUILD_ID;
  if (!name && !buildId) {
    if (flags.versioningBehavior) throw new CliError('--versioning-behavior needs --deployment-name and --build-id');
    return undefined;
  }
  if (!name || !buildId)
    throw new CliError(
      'Worker Versioning needs both --deployment-name and --build-id (or INFINITY_DEPLOYMENT_NAME and INFINITY_BUILD_ID)',
    );
  return {
    name,
    buildId,
    defaultVersioningBehavior: flags.versioningBehavior === 'pinned' ? 'PINNED' : 'AUTO_UPGRADE',
  };
}
