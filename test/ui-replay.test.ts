/**
 * Whether the Temporal UI's texts are part of the SDK's determinism check (decision 62): the workflow bundled with
 * every activity summary and every child's static summary changed (`test/fixtures/ui-text-stub/`) replays every
 * recorded release set. So summaries, which are user metadata on the commands, change without a patch; a change of
 * the commands themselves does not (the negative control of `test/replay.test.ts`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import webpack from 'webpack';
import { expect, it } from 'vitest';
import { workflowIdOfHistory } from '../src/cli/commands/replay';
import { threadWorkflowsPath } from '../src/worker/create-worker';

const root = join(__dirname, 'fixtures', 'histories');
const workflows = join(__dirname, '..', 'src', 'workflows');
const stub = join(__dirname, 'fixtures', 'ui-text-stub', 'ui-text.ts');

interface Event {
  userMetadata?: { summary?: { data?: string } };
}

it('replays every recorded set with other activity summaries and child static summaries', async () => {
  const { code } = await bundleWorkflowCode({
    workflowsPath: threadWorkflowsPath(),
    logger: new DefaultLogger('WARN'),
    webpackConfigHook: (config) => {
      config.plugins = [
        ...(config.plugins ?? []),
        new webpack.NormalModuleReplacementPlugin(/^\.\/ui-text$/, (resource: { context: string; request: string }) => {
          if (resource.context === workflows) resource.request = stub;
        }),
      ];
      return config;
    },
  });
  expect(code).toContain('changed summary of slice');
  expect(code).toContain('changed static summary');
  let summaries = 0;
  for (const release of readdirSync(root)) {
    for (const file of readdirSync(join(root, release)).filter((f) => f.endsWith('.json'))) {
      const history = JSON.parse(readFileSync(join(root, release, file), 'utf8')) as { events: Event[] };
      // The recorded summaries are the real ones: the replay meets other metadata on the same commands.
      for (const e of history.events) {
        const s = e.userMetadata?.summary;
        if (s?.data) {
          expect(JSON.parse(Buffer.from(s.data, 'base64').toString('utf8'))).not.toMatch(/^changed/);
          summaries += 1;
        }
      }
      await Worker.runReplayHistory(
        { workflowBundle: { code }, replayName: `${release}/${file}` },
        history,
        workflowIdOfHistory(history),
      );
    }
  }
  expect(summaries).toBeGreaterThan(100);
}, 300_000);
