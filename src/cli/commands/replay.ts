/**
 * `replay <files...>`: replay exported thread histories against this build's workflow code (exit 2 on nondeterminism).
 *
 * The replay gate on real threads. Before deploying new workflow code, export the histories of threads that are
 * waiting in production (`temporal workflow show --workflow-id <id> --output json > <id>.json`) and replay them
 * against the code about to ship; a nondeterministic change fails here instead of stranding those threads.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { Command } from 'commander';
import { threadWorkflowsPath } from '../../worker/create-worker';
import type { Out } from '../format';
import { CliError } from '../target';

/**
 * The workflow id a history was recorded under, from its start event (servers since 1.23 write it there). A replay must
 * run under it: a thread started by hand is named by its workflow id (decision 58), and under another id its signal
 * handler takes another path than the one recorded.
 */
export function workflowIdOfHistory(history: unknown): string | undefined {
  const events = (
    history as { events?: { workflowExecutionStartedEventAttributes?: { workflowId?: unknown } }[] } | null
  )?.events;
  const id = Array.isArray(events) ? events[0]?.workflowExecutionStartedEventAttributes?.workflowId : undefined;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

export function registerReplay(program: Command, out: Out): void {
  program
    .command('replay')
    .description("replay exported thread histories against this build's workflow code (exit 2 on nondeterminism)")
    .argument('<files...>', 'history files, as written by `temporal workflow show --output json`')
    .option('--workflows-bundle <file>', 'replay against this prebuilt workflow bundle instead of this build')
    .action(async (files: string[], opts: { workflowsBundle?: string }) => {
      // One replay worker per history; their lifecycle lines would bury the verdicts.
      Runtime.install({ logger: new DefaultLogger('WARN') });
      const workflowBundle = opts.workflowsBundle
        ? { codePath: opts.workflowsBundle }
        : {
            code: (
              await bundleWorkflowCode({ workflowsPath: threadWorkflowsPath(), logger: new DefaultLogger('WARN') })
            ).code,
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
    });
}
