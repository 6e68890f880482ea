/**
 * `npx tsx bench/probes/governed.ts [threads] [rpm] [concurrency] [tenants]`: the `governed` phase of `npm run bench`
 * alone (bench/phases/governed.ts), at the size given (default 200 threads, 600 requests a minute, 8 at once, 10
 * tenants). Prints its JSON.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { runMain } from '../lib/main';
import { governedPhase } from '../phases/governed';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const result = await governedPhase(
    {
      threads: Number(process.argv[2] ?? 200),
      rpm: Number(process.argv[3] ?? 600),
      concurrency: Number(process.argv[4] ?? 8),
      tenants: Number(process.argv[5] ?? 10),
    },
    (s) => process.stderr.write(`${s}\n`),
  );
  console.log(JSON.stringify(result, null, 2));
}

runMain(main);
