/**
 * `replay <files...>`: replay exported thread histories against this build's workflow code (exit 2 on nondeterminism).
 *
 * The replay gate on real threads. Before deploying new workflow code, export the histories of threads that are
 * waiting in production (`temporal workflow show --workflow-id <id> --output json > <id>.json`) and replay them
 * against the code about to ship; a nondeterministic change fails here instead of stranding those threads.
 */
import type { Command } from 'commander';
import type { Out } from '../format';
import { replayAction } from '../lazy-actions';

export function registerReplay(program: Command, out: Out): void {
  program
    .command('replay')
    .description("replay exported thread histories against this build's workflow code (exit 2 on nondeterminism)")
    .argument('<files...>', 'history files, as written by `temporal workflow show --output json`')
    .option('--workflows-bundle <file>', 'replay against this prebuilt workflow bundle instead of this build')
    // The Temporal worker and this build's workflow code load when it runs: actions/replay.ts.
    .action(async (files: string[], opts: { workflowsBundle?: string }) => replayAction().runReplay(files, opts, out));
}
