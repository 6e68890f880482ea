/**
 * Whether the Temporal UI's texts are part of the SDK's determinism check (decision 62): the workflow bundled with
 * every activity summary and every child's static summary changed (`test/fixtures/ui-text-stub/`) replays the
 * recorded release sets (a sample of each in `npm test`, every history in the soak tier: `test/recorded.ts`). So
 * summaries, which are user metadata on the commands, change without a patch; a change of the commands themselves
 * does not (the negative control of `test/replay.test.ts`).
 */
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import webpack from 'webpack';
import { beforeAll, describe, expect, it } from 'vitest';
import { threadWorkflowsPath } from '../src/worker/create-worker';
import { type RecordedHistory, recordedHistories } from './recorded';

const workflows = join(__dirname, '..', 'src', 'workflows');
const stub = join(__dirname, 'fixtures', 'ui-text-stub', 'ui-text.ts');

interface Event {
  userMetadata?: { summary?: { data?: string } };
}

let code: string;
beforeAll(async () => {
  ({ code } = await bundleWorkflowCode({
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
  }));
  expect(code).toContain('changed summary of slice');
  expect(code).toContain('changed static summary');
}, 120_000);

const byRelease = new Map<string, RecordedHistory[]>();
for (const h of recordedHistories(false)) {
  const release = h.name.split('/')[0]!;
  byRelease.set(release, [...(byRelease.get(release) ?? []), h]);
}

describe.each([...byRelease])(
  'with other activity summaries and child static summaries, release %s',
  (_, histories) => {
    it(`replays its recorded histories (${histories.length})`, async () => {
      let summaries = 0;
      for (const { history } of histories) {
        // The recorded summaries are the real ones: the replay meets other metadata on the same commands.
        for (const e of (history as { events: Event[] }).events) {
          const s = e.userMetadata?.summary;
          if (s?.data) {
            expect(JSON.parse(Buffer.from(s.data, 'base64').toString('utf8'))).not.toMatch(/^changed/);
            summaries += 1;
          }
        }
      }
      expect(summaries).toBeGreaterThan(0);
      // One replay worker for the set (results come back by workflow id).
      const names = new Map(histories.map((h) => [h.workflowId, h.name]));
      expect(names.size).toBe(histories.length);
      const failed: string[] = [];
      let replayed = 0;
      for await (const r of Worker.runReplayHistories(
        { workflowBundle: { code }, replayName: 'changed UI texts' },
        histories.map(({ workflowId, history }) => ({ workflowId, history })),
      )) {
        replayed += 1;
        if (r.error) failed.push(`${names.get(r.workflowId)}: ${r.error.message}`);
      }
      expect(failed).toEqual([]);
      expect(replayed).toBe(histories.length);
    });
  },
);
