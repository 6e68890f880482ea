/**
 * One real Temporal dev server for the whole run (installed on first use), one real PostgreSQL server (each test file
 * that needs it creates its own database there), and the thread workflows bundled once so every worker in every test
 * file starts fast. The run's scratch folder goes at teardown (`INFINITY_KEEP_SCRATCH=1` keeps it).
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import pg from 'pg';
import type { ProvidedContext } from 'vitest';
import { type LocalPostgres, startLocalPostgres } from '../infra/postgres';
import { runScratch } from '../infra/scratch';
import { startDevServer, type DevServer } from '../src/devserver/server';
import { threadWorkflowsPath } from '../src/worker/create-worker';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    scratchDir: string;
    /** A PostgreSQL server (URL of a database to connect to, as a role that may create databases): see `test/postgres.ts`. */
    postgresUrl: string;
    /** Prefix of this run's test databases, so teardown drops exactly those on a server it did not start. */
    postgresDatabasePrefix: string;
  }
}

let server: DevServer | undefined;
let postgres: LocalPostgres | undefined;

interface SetupContext {
  provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]): void;
}

export default async function setup(project: SetupContext): Promise<() => Promise<void>> {
  // Removed at teardown with everything in it: the dev server's database, and each test file's temp dirs
  // (test/setup-runtime.ts points TMPDIR into it).
  const scratch = runScratch('infinity-test-');
  const scratchDir = scratch.dir;
  const external = process.env.INFINITY_TEST_POSTGRES_URL;
  const databasePrefix = `infinity_test_${randomUUID().slice(0, 8)}_`;
  const stop = async () => {
    const dropped =
      external &&
      dropDatabases(external, databasePrefix).catch((e: unknown) =>
        console.log(`test databases not dropped: ${String(e)}`),
      );
    await Promise.all([server?.stop(), postgres?.stop(), dropped]);
    scratch.remove();
  };
  // Both at once; either failing fails the run (no PostgreSQL binaries: PostgresNotInstalledError says what to install).
  const started = await Promise.allSettled([
    startDevServer({ ui: false, dbFilename: join(scratchDir, 'temporal.sqlite'), log: (l) => console.log(l) }).then(
      (s) => (server = s),
    ),
    // Its data in the scratch folder: a run killed before its teardown leaves it to the next run's sweep.
    external
      ? Promise.resolve()
      : startLocalPostgres({ dataDir: join(scratchDir, 'postgres', 'data') }).then((p) => (postgres = p)),
  ]);
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  project.provide('temporalAddress', server!.address);
  project.provide('postgresUrl', external ?? postgres!.url());
  project.provide('postgresDatabasePrefix', databasePrefix);
  project.provide('workflowBundlePath', await bundleThreadWorkflows(scratchDir));
  project.provide('scratchDir', scratchDir);
  return stop;
}

/** Bundles the thread workflows once into `scratchDir` (the unit tier's setup needs only this); returns the path. */
export async function bundleThreadWorkflows(scratchDir: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('WARN'),
  });
  const workflowBundlePath = join(scratchDir, 'workflows-bundle.js');
  writeFileSync(workflowBundlePath, code);
  return workflowBundlePath;
}

/** Drops this run's test databases from a server that outlives the run (a throwaway server goes with its data). */
async function dropDatabases(url: string, prefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [prefix],
    );
    // FORCE (PostgreSQL 13+) ends connections a killed worker process may have left behind.
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
