// Keep the Temporal worker's own INFO logs out of test output, and each test file's temp dirs inside the run's scratch
// folder, which the tier's global setup removes at teardown (a run used to leave hundreds of megabytes in /tmp).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { inject } from 'vitest';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process.
}

const scratchDir = inject('scratchDir');
if (scratchDir) {
  // Set before any test code asks os.tmpdir(); processes the tests start inherit it.
  process.env.TMPDIR = join(scratchDir, 'tmp');
  mkdirSync(process.env.TMPDIR, { recursive: true, mode: 0o711 }); // see infra/scratch.ts
}
