/** `dev`: run a Temporal dev server, a worker and the live events endpoint in this process; prints the UI link. */
import type { Command } from 'commander';
import type { DevOptions } from '../actions/dev';
import type { Out } from '../format';
import { devAction } from '../lazy-actions';
import { serveOptions } from '../serve-flags';

export function registerDev(program: Command, out: Out): void {
  serveOptions(program.command('dev'))
    .description('run a Temporal dev server, a worker and the live events endpoint here; prints the UI link')
    .option('--port <port>', "the dev server's gRPC port, stable across restarts (default: a free port)")
    .option('--ui-port <port>', "the Temporal UI's port (default: a free port)")
    .option('--no-ui', 'no Temporal Web UI (it has no authentication: docs/security.md)')
    .option(
      '--answer-by-hand',
      'the demo get_build_status tool leaves its calls pending, for `deliver` or a `tool_result` signal',
    )
    // What it runs on (the dev server, the worker, the models, the tool servers) loads when it runs: actions/dev.ts.
    .action(async (opts: DevOptions, cmd: Command) => devAction().runDev(opts, cmd, out));
}
