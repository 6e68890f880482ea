/**
 * What `replay` does (its arguments and help: commands/replay.ts): bundle this build's workflow code (or take a
 * prebuilt bundle) and replay each history against it. Loaded only when the command runs (see lazy-actions.ts).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { threadWorkflowsPath } from '../../worker/create-worker';
import type { Out } from '../format';
import { workflowIdOfHistory } from '../replay-history';
import { CliError } from '../errors';

export async function runReplay(files: string[], opts: { workflowsBundle?: string }, out: Out): Promise<void> {
  // One replay worker per history; their lifecycle lines would bury the verdicts.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workflowBundle = opts.workflowsBundle
    ? { codePath: opts.workflowsBundle }
    : {
        code: (await bundleWorkflowCode({ workflowsPath: threadWorkflowsPath(), logger: new DefaultLogger('WARN') }))
          .code,
      };
  const failed: string[] = [];
  for (const file of files) {
    let history: unknown;
    try {
      history = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw new CliError(`${file}: not a JSON history (${e instanceof Error ? e.message : String(e)})`);
    }
    try {
      await Worker.runReplayHistory(
        { workflowBundle, replayName: basename(file) },
        history,
        workflowIdOfHistory(history),
      );
      out(`ok      ${file}`);
    } catch (e) {
      failed.push(file);
      out(`FAILED  ${file}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    }
  }
  if (failed.length > 0)
    throw new CliError(`${failed.length} of ${files.length} histories do not replay: do not deploy this build`);
  out(`${files.length} histories replay`);
}
