/**
 * `npm run cluster [-- --shards N --dir <dir> --port <port> --per-service --verbose]`: a local Temporal cluster on
 * PostgreSQL with N history shards (default 4), built first if needed (`npm run cluster:install`); Ctrl-C stops it.
 * `--dir` keeps config, logs and the database across runs (the shard count of a database never changes); `--port` is
 * the frontend's gRPC port; `--per-service` runs frontend, history, matching and worker as four processes.
 */
import { parseArgs } from 'node:util';
import { startLocalCluster } from '../../infra/cluster/cluster';
import { installClusterBinaries } from '../../infra/cluster/install';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      shards: { type: 'string', default: '4' },
      dir: { type: 'string' },
      port: { type: 'string' },
      'per-service': { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
    },
  });
  const say = (l: string) => console.error(l);
  const binaries = await installClusterBinaries({ log: say });
  const started = Date.now();
  const cluster = await startLocalCluster({
    binaries,
    shards: Number(values.shards),
    dir: values.dir,
    frontendPort: values.port ? Number(values.port) : undefined,
    processes: values['per-service'] ? 'per-service' : 'one',
    // Server lines are in the log files; on the terminal only with --verbose.
    log: (l) => (values.verbose || l.startsWith('[cluster]') ? say(l) : undefined),
  });
  console.log(
    `Temporal cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${cluster.address} (namespace ${cluster.namespace}, ${cluster.shards} shards)`,
  );
  console.log(
    `  processes: ${Object.entries(cluster.pids)
      .map(([n, p]) => `${n}=${p}`)
      .join(' ')}; config and logs in ${cluster.dir}`,
  );
  console.log(`  PostgreSQL: ${cluster.databaseUrl}`);
  console.log(`Point the project at it:`);
  console.log(`  export TEMPORAL_ADDRESS=${cluster.address} INFINITY_STORE=/tmp/conversations.sqlite`);
  console.log(`  npm run cli -- worker                              # one terminal (simulated model)`);
  console.log(`  npm run cli -- send demo "Is build 42 green?"      # another, with the same exports`);
  console.log(`  npm run cli -- history demo`);
  console.log('Ctrl-C stops the cluster.');
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    console.error('stopping ...');
    void cluster.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
