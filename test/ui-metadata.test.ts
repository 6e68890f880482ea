/**
 * What the Temporal UI shows of a thread, read back through the Temporal API: the memo title, activity summaries
 * that name what each slice was given and what the slice before it did (a call with its arguments, a reply's first
 * line), current details with the pending call, a pending choice and the command that answers it, the last reply in
 * full, and children titled and summarized by their instructions.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { eventually, greenBuildTool, recordingTool, startTestSystem, uid } from './helpers';
import type { ToolContext } from '../src/tools/tool';
import { toolResult } from '../src/tools/messages';

const decode = (p: temporal.api.common.v1.IPayload | null | undefined) =>
  p ? defaultPayloadConverter.fromPayload<string>(p) : undefined;

describe('Temporal UI metadata', () => {
  it('titles the thread, summarizes each slice, and shows the pending call in the current details', async () => {
    const waits: ToolContext[] = [];
    const reply = `Build 42 is green.\n${'All 314 tests passed. '.repeat(20)}The end.`;
    const model = new ScriptedModel((req) => {
      const last = req.messages[req.messages.length - 1]!;
      if (last.role === 'user' && last.text.startsWith('Is build'))
        return { toolCall: { name: 'get_build_status', args: { build_id: '42' } } };
      if (last.role === 'user') {
        return {
          toolCall: {
            name: 'spawn_thread',
            args: {
              instructions: 'Collect the flaky tests of build 42\nand report them',
              child_of: [/`([^`]+)`/.exec(req.system)![1]],
            },
          },
        };
      }
      if (last.role === 'tool_result' && last.name === 'spawn_thread')
        return { toolCall: { name: 'wait_here', args: {} } };
      return { text: reply };
    });
    const sys = await startTestSystem({ model, tools: [greenBuildTool(), recordingTool('wait_here', waits)] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('ui') });
      await thread.sendUserText('Is build 42 green?\nPlease check.');
      await thread.waitForIdle({ settled: true });
      await thread.sendUserText('spawn a helper');
      await eventually(() => waits.find((w) => w.threadId === thread.threadId));
      // The tool runs inside the slice: the slice's record lands in history when its workflow task completes.
      await thread.waitForIdle();

      const description = await thread.workflow.describe();
      expect(description.memo?.title).toBe('Is build 42 green? Please check.');
      const history = await thread.workflow.fetchHistory();
      const summaries = (history.events ?? [])
        // A slice is a local activity (its marker) unless it outran its budget: then also the adopting activity.
        .filter(
          (e) =>
            e.markerRecordedEventAttributes?.markerName === 'core_local_activity' ||
            e.activityTaskScheduledEventAttributes,
        )
        .map((e) => decode(e.userMetadata?.summary));
      expect(summaries.slice(0, 3)).toEqual([
        'slice 1: user "Is build 42 green? Please check."',
        'slice 2: get_build_status {"build_id":"42"} → "Build 42: green"',
        'slice 3: user "spawn a helper" — after reply "Build 42 is green."',
      ]);
      expect(summaries[3]).toBe(
        'slice 4: spawn_thread {"instructions":"Collect the flaky tests of build 42\\nand report them","chil… → "Child thread is successfully spawned and has ID: …"',
      );

      const details = async () =>
        ((await thread.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ??
        '';
      expect(await details()).toMatch(/^\*\*waiting_tool\*\* · \d+ items · 4 slices/);
      expect(await details()).toContain('waiting for `wait_here`');
      expect(await details()).toContain('slice 4 called `wait_here {}`');
      expect(await details()).toContain(`full history: \`infinity-temporal history ${thread.threadId}\``);

      // A tool asks the user to choose: the details name the choice and the exact command that answers it.
      const call = waits.find((w) => w.threadId === thread.threadId)!;
      const prompt = {
        kind: 'user_choice' as const,
        id: 'deploy-42',
        prompt: 'Deploy build 42?',
        choices: ['yes', 'no'],
        default: 1,
        responseUrl: 'http://127.0.0.1:9/answer',
      };
      await thread.deliver({
        id: 'p1',
        threadId: thread.threadId,
        content: { type: 'text', text: '' },
        synthetic: { type: 'prompt', toolCallId: call.toolCallId, prompt },
      });
      await eventually(async () => (await details()).includes('choice `deploy-42`') || undefined);
      expect(await details()).toContain(
        `asks the user: Deploy build 42? [yes / no] — choice \`deploy-42\`: answer with \`infinity-temporal answer ${thread.threadId} deploy-42 <index>\` (0 = yes, 1 = no; without an index: 1, the default)`,
      );

      // The last reply in full, not its first 200 characters.
      await thread.deliver(toolResult(call, 'done'));
      await eventually(async () => (await details()).includes('The end.') || undefined);
      expect(await details()).toContain(`last reply: ${reply}`);

      const [child] = (await thread.status()).children;
      const childDescription = await sys.temporal.workflow.getHandle(child!).describe();
      expect(childDescription.memo?.title).toBe('Collect the flaky tests of build 42 and report them');
      expect(await childDescription.staticSummary()).toBe('Collect the flaky tests of build 42');
      expect(await childDescription.staticDetails()).toBe(
        `child thread of \`${thread.threadId}\`\n\nCollect the flaky tests of build 42\nand report them`,
      );
    } finally {
      await sys.shutdown();
    }
  });

  it('titles a thread its first user text creates at its start: no memo write in its history', async () => {
    const sys = await startTestSystem({ model: new ScriptedModel(() => ({ text: 'Green.' })) });
    try {
      const threadId = uid('ui-title');
      await sys.client.sendUserText(threadId, '  Is build\n7 green?  ');
      const thread = sys.client.thread(threadId);
      await thread.waitForIdle();
      expect((await thread.workflow.describe()).memo?.title).toBe('Is build 7 green?');
      const types = ((await thread.workflow.fetchHistory()).events ?? []).map((e) => e.eventType);
      expect(types).not.toContain(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED);
      // A thread started without text is titled by its workflow when the first user text arrives.
      const started = await sys.client.startThread({ threadId: uid('ui-title') });
      await started.sendUserText('Second thread');
      await started.waitForIdle();
      expect((await started.workflow.describe()).memo?.title).toBe('Second thread');
    } finally {
      await sys.shutdown();
    }
  });
});
