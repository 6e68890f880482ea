/**
 * Decision 79's SDK behaviour, on its own: Temporal's TypeScript SDK (1.23, 1.24) delivers a local activity's result a
 * workflow task late when a query arrives while the local activity runs, and a `patched()` first asked after that
 * result does not replay (TMPRL1100). The upstream report built on it: docs/upstream/sdk-late-local-activity-result.md.
 *
 * `npx tsx bench/probes/late-resolution.ts [workflows=20] [iterations=10] [query|noquery] [fail|ok] [update]
 *   [--histories DIR]`
 *
 * Starts a dev server and runs the probe (`late-resolution/probe.ts`, which says what it counts) on the SDK the project
 * depends on. Prints, for the run: local activity results delivered a task late, patch markers recorded a task after
 * the local activity's marker, and histories that fail to replay against the same code. With `update`, the client also
 * sends updates without pause while the workflows run: an update accepted in the late task comes before the commands
 * that follow the result live, and after them on replay (decision 80), so histories fail to replay even where no patch
 * is asked late. `scripts/sdk-newest.ts` runs the same probe on the newest published SDK.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { findTemporalCli } from '../../src/devserver/cli';
import { startDevServer } from '../../src/devserver/server';
import { runMain } from '../lib/main';
import { parseArgs, runProbe } from './late-resolution/probe';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = await startDevServer({ ui: false });
  try {
    const args = [...process.argv.slice(2), '--address', server.address, '--temporal-cli', findTemporalCli()];
    const result = await runProbe(parseArgs(args));
    console.log(JSON.stringify(result));
  } finally {
    await server.stop();
  }
}

if (require.main === module) runMain(main);
