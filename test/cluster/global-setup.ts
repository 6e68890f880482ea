/**
 * Global setup of the cluster suite (`npm run test:cluster`): builds the Temporal server if needed, starts one local
 * multi-shard cluster on PostgreSQL for the whole run, and bundles the thread workflows once. It provides the same
 * keys as the default suite's setup (so `startTestSystem` from ../helpers runs against the cluster unchanged) plus
 * the cluster's own, for tests that start workers in other processes, kill a server process or look into its
 * database.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { ProvidedContext } from 'vitest';
import { type LocalCluster, startLocalCluster } from '../../infra/cluster/cluster';
import { installClusterBinaries } from '../../infra/cluster/install';
import { type LocalPostgres, startLocalPostgres } from '../../infra/postgres';
import { runScratch } from '../../infra/scratch';
import { threadWorkflowsPath } from '../../src/worker/create-worker';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` of the cluster's frontend (also provided as `temporalAddress`). */
    clusterAddress: string;
    /** The `temporal` database (table `executions`, column `shard_id`). */
    clusterDatabaseUrl: string;
    clusterShards: number;
    /** Config and server logs. */
    clusterDir: string;
    /** Process ids of the `temporal-server` processes (`{ server }`, or one per service), e.g. to kill one. */
    clusterPids: Record<string, number>;
  }
}

interface SetupContext {
  provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]): void;
}

let cluster: LocalCluster | undefined;
let postgres: LocalPostgres | undefined;

export default async function setup(project: SetupContext): Promise<() => Promise<void>> {
  const scratch = runScratch('infinity-cluster-test-');
  const scratchDir = scratch.dir;
  const binaries = await installClusterBinaries({ log: (l) => console.log(l) });
  // One PostgreSQL for the cluster and for whatever else a test keeps there (e.g. a conversation store).
  postgres = await startLocalPostgres({
    dataDir: join(scratchDir, 'postgres', 'data'), // swept with the scratch folder if the run is killed
    settings: { max_connections: 400 },
  });
  // CLUSTER_SHARDS and CLUSTER_PROCESSES=per-service let a run try other topologies without code changes.
  cluster = await startLocalCluster({
    binaries,
    dir: join(scratchDir, 'cluster'), // its config and logs go with the scratch folder
    postgres,
    shards: Number(process.env.CLUSTER_SHARDS ?? 4),
    processes: process.env.CLUSTER_PROCESSES === 'per-service' ? 'per-service' : 'one',
    log: (l) => l.startsWith('[cluster]') && console.log(l),
  });
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('WARN'),
  });
  const workflowBundlePath = join(scratchDir, 'workflows-bundle.js');
  writeFileSync(workflowBundlePath, code);
  project.provide('temporalAddress', cluster.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('scratchDir', scratchDir);
  project.provide('clusterAddress', cluster.address);
  project.provide('clusterDatabaseUrl', cluster.databaseUrl);
  project.provide('clusterShards', cluster.shards);
  project.provide('clusterDir', cluster.dir);
  project.provide('clusterPids', cluster.pids);
  // As in the default suite (test/global-setup.ts): the cluster's PostgreSQL also holds the tests' own databases.
  project.provide('postgresUrl', postgres.url());
  project.provide('postgresDatabasePrefix', `infinity_test_${randomUUID().slice(0, 8)}_`);
  return async () => {
    await cluster?.stop();
    await postgres?.stop();
    scratch.remove();
  };
}
