/**
 * `npm run cluster:install`: builds `temporal-server` and `temporal-sql-tool` from the Go module at the server version
 * the project's Temporal CLI bundles, and copies the PostgreSQL schema, into `.temporal/cluster/`. A no-op when the
 * version stamp matches; `--force` rebuilds. Needs Go (`$GO`, `/usr/local/go/bin/go` or `go` on PATH).
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { findTemporalCli } from '../../src/devserver/cli';
import { clusterInstalled, installClusterBinaries, TEMPORAL_SERVER_VERSION } from '../../infra/cluster/install';

/** Warns when the CLI's bundled server differs from the version built here: the two should run the same server code. */
function checkCliServerVersion(): void {
  try {
    const out = execFileSync(findTemporalCli({ install: false }), ['--version'], { encoding: 'utf8' });
    const bundled = /Server (\d+\.\d+\.\d+)/.exec(out)?.[1];
    if (bundled && `v${bundled}` !== TEMPORAL_SERVER_VERSION) {
      console.error(
        `warning: the Temporal CLI bundles server v${bundled}, the cluster is built at ${TEMPORAL_SERVER_VERSION}`,
      );
    }
  } catch {
    // No CLI installed: nothing to compare with.
  }
}

async function main(): Promise<void> {
  const force = process.argv.includes('--force');
  checkCliServerVersion();
  if (!force && clusterInstalled()) console.error(`Temporal server ${TEMPORAL_SERVER_VERSION} already built`);
  const started = Date.now();
  const bins = await installClusterBinaries({ force, log: (l) => console.error(l) });
  for (const path of [bins.server, bins.sqlTool]) console.log(`${path} (${(statSync(path).size / 1e6).toFixed(1)} MB)`);
  console.log(`${bins.schemaDir}`);
  console.log(execFileSync(bins.server, ['--version'], { encoding: 'utf8' }).trim());
  console.error(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
