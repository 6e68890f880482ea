/**
 * Replays history files (JSON, as the probe's `--histories` writes them or `temporal workflow show --output json`)
 * against the probe's workflow, on the SDK this file resolves: in place, the project's; the copy that
 * `scripts/sdk-newest.ts` puts in `.cache/sdk-newest/<version>/probe/`, that version's.
 *
 * `npx tsx bench/probes/late-resolution/replay.ts FILE...` prints one line per file: `ok`, or `FAILED` and the replay's
 * TMPRL code and message. Exits 1 when any failed.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { sdkVersion } from './probe';

async function main(files: string[]): Promise<boolean> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflow'),
    logger: new DefaultLogger('ERROR'),
  });
  let ok = true;
  for (const file of files) {
    const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
    const error = await Worker.runReplayHistory({ workflowBundle: bundle }, history, basename(file)).then(
      () => undefined,
      (e: unknown) => /\[TMPRL\d+\][^"]*/.exec(String(e))?.[0] ?? String(e).slice(0, 300),
    );
    if (error) ok = false;
    console.log(`SDK ${sdkVersion()} ${basename(file)}: ${error ? `FAILED ${error}` : 'ok'}`);
  }
  return ok;
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (ok) => process.exit(ok ? 0 : 1),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
