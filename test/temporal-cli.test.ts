/**
 * The Temporal-level contract, as the README's "From the Temporal CLI" section writes it: each of its blocks runs as
 * written, through the real `temporal` CLI, against a thread served by a real worker; the thread's history and
 * status then show each command took effect.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findTemporalCli } from '../src/devserver/cli';
import { ScriptedModel } from '../src/model/scripted';
import type { ToolContext } from '../src/tools/tool';
import { subscriptionStart } from '../src/tools/messages';
import { firstText } from '../src/model/projection';
import { checkReplay, eventually, recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';

const run = promisify(execFile);

/** The shell blocks of the README section, by their first line (a comment). */
function readmeBlocks(): Map<string, string> {
  const readme = readFileSync(join(__dirname, '..', 'docs', 'temporal-cli.md'), 'utf8');
  const section = readme.split('\n## From the Temporal CLI\n')[1]!.split('\n## ')[0]!;
  const blocks = new Map<string, string>();
  for (const m of section.matchAll(/```sh\n([\s\S]*?)```/g))
    blocks.set(m[1]!.split('\n')[0]!.replace(/^# /, ''), m[1]!);
  return blocks;
}

describe('the Temporal CLI contract (README "From the Temporal CLI")', () => {
  const blocks = readmeBlocks();
  const calls: ToolContext[] = [];
  const thread = uid('cli-thread');
  let sys: TestSystem;
  let env: Record<string, string>;
  let childId = '';

  /** Runs the README block whose first line starts with `label`, in bash, as written. */
  const block = async (label: string, extra: Record<string, string> = {}) => {
    const [, script] = [...blocks].find(([l]) => l.startsWith(label)) ?? [];
    if (!script) throw new Error(`no README block "${label}"`);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...env, ...extra },
      maxBuffer: 16 << 20,
    });
    return stdout;
  };

  beforeAll(async () => {
    const model = new ScriptedModel((req) => {
      const last = req.messages[req.messages.length - 1]!;
      if (last.role === 'user' && last.text.startsWith('Is build 42'))
        return { toolCall: { name: 'get_build_status', args: { build_id: '42' } } };
      if (last.role === 'user' && last.text.startsWith('And build 43'))
        return { toolCall: { name: 'get_build_status', args: { build_id: '43' } } };
      if (last.role === 'tool_result' && last.name === 'get_build_status' && firstText(last.content) === 'red')
        return { text: 'Build 43 is red.' };
      if (last.role === 'tool_result' && last.name === 'get_build_status')
        return { toolCall: { name: 'watch_builds', args: {} } };
      if (last.role === 'tool_result' && last.name === 'receive_event__injected')
        return { text: 'Noted: a new build started.' };
      if (last.role === 'tool_result') return { text: 'Watching.' };
      return { text: 'Hello.' };
    });
    sys = await startTestSystem({
      model,
      tools: [recordingTool('get_build_status', calls), recordingTool('watch_builds', calls)],
    });
    const bin = findTemporalCli();
    env = {
      ...(process.env as Record<string, string>),
      PATH: `${dirname(bin)}:${process.env.PATH}`,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TQ: sys.taskQueue,
      THREAD: thread,
    };
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('has the blocks this test runs', () => {
    expect([...blocks.keys()]).toEqual([
      'new thread with user text (started if it does not exist; no workflow input needed)',
      'wait for idle (settled: also until no tool call is pending), then the status',
      'the result of the pending tool call CALL (status: pendingCall.id)',
      'an event for the subscription CALL started (an event thread, a child, handles it; "associative": true in',
      'more user text by its own signal (0.5 workers): the readable form, text first',
      'a tool result by its own signal: the tool\'s name and the text first ("content":[...] instead of "text" for images);',
      'what the thread dropped and why, and the conversation as its run saw it go by (no history events)',
      'a thread started bare: a root thread named by its workflow id, waiting for input',
      'lists: by status, kind and parent',
      'the history, and the handlers with their descriptions and the current details',
    ]);
  });

  it('drives a thread through user text, a tool result and a subscription event', async () => {
    await block('new thread with user text');
    const first = await eventually(() => calls.find((c) => c.threadId === thread && c.toolName === 'get_build_status'));
    const status = await block('wait for idle');
    expect(status).toContain('waiting_tool');
    expect(status).toContain(first.toolCallId);

    await block('the result of the pending tool call', { CALL: first.toolCallId });
    const watch = await eventually(() => calls.find((c) => c.threadId === thread && c.toolName === 'watch_builds'));
    await sys.client.deliver(subscriptionStart(watch, 'watching builds'));
    await sys.client.thread(thread).waitForIdle();

    await block('an event for the subscription', { CALL: watch.toolCallId });
    // An event that is not associative is handled by an event thread, a child that inherits the history.
    const child = await eventually(async () => (await sys.client.thread(thread).status()).children[0]);
    await eventually(async () =>
      (await sys.client.thread(child).history()).some(
        (i) => i.kind === 'assistant' && i.text === 'Noted: a new build started.',
      ),
    );
    expect(render(await sys.client.thread(thread).history())).toEqual([
      'user: Is build 42 green?',
      'call #1 get_build_status {"build_id":"42"}',
      'result #1: green',
      'call #2 watch_builds {}',
      'result #2: watching builds',
      'assistant: Watching.',
    ]);
    expect(render(await sys.client.thread(child).history()).slice(-2)).toEqual([
      'result #2: build 43 started',
      'assistant: Noted: a new build started.',
    ]);
    childId = child;
    await checkReplay(sys.client.thread(thread), 'temporal-cli-thread');
    const kinds = await sys.temporal.workflow.getHandle(thread).describe();
    expect(kinds.searchAttributes.ThreadKind).toEqual(['root']);
  });

  it('takes a user text and a tool result by their own signal names, into the same conversation', async () => {
    await block('more user text by its own signal');
    const second = await eventually(() =>
      calls.find((c) => c.threadId === thread && c.toolName === 'get_build_status' && c !== calls[0]),
    );
    await block('a tool result by its own signal', { CALL: second.toolCallId });
    const handle = sys.client.thread(thread);
    await eventually(async () =>
      (await handle.history()).some((i) => i.kind === 'assistant' && i.text === 'Build 43 is red.'),
    );
    await handle.waitForIdle();
    expect(render(await handle.history()).slice(6)).toEqual([
      'user: And build 43?',
      'call #3 get_build_status {"build_id":"43"}',
      'result #3: red',
      'assistant: Build 43 is red.',
    ]);
    const names = ((await handle.workflow.fetchHistory()).events ?? []).flatMap(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? [],
    );
    expect(names.slice(-2)).toEqual(['user_text', 'tool_result']);

    const out = await block('what the thread dropped and why');
    // The CLI prints each result as `QueryResult  <json>`.
    const [drops, transcript] = [...out.matchAll(/^\s*QueryResult\s+(.*)$/gm)].map((m) => JSON.parse(m[1]!) as unknown);
    // (The CLI prints an empty list as null.)
    expect(drops).toMatchObject({ counts: {} });
    expect((drops as { recent: unknown }).recent ?? []).toEqual([]);
    expect(transcript).toEqual(
      expect.arrayContaining([
        'user: And build 43?',
        'call get_build_status {"build_id":"43"}',
        'result of get_build_status: red',
        'assistant: Build 43 is red.',
      ]),
    );
  });

  it('starts a bare thread that names itself and answers', async () => {
    await block('a thread started bare');
    const bare = sys.client.thread(`${thread}-bare`);
    const status = await bare.waitForIdle();
    expect(status).toMatchObject({ threadId: `${thread}-bare`, kind: 'root', status: 'idle' });
    const description = await eventually(async () => {
      const d = await bare.workflow.describe();
      return d.searchAttributes.ThreadKind ? d : undefined;
    });
    expect(description.searchAttributes).toMatchObject({ ThreadKind: ['root'], AgentStatus: ['idle'] });
    await sys.client.sendUserText(`${thread}-bare`, 'Anyone there?');
    await eventually(async () => (await bare.history()).some((i) => i.kind === 'assistant' && i.text === 'Hello.'));
    await bare.waitForIdle();
    await checkReplay(bare, 'hand-started-thread');
  });

  it('lists threads by kind and shows the history and the handlers', async () => {
    // Visibility follows the workflow by a moment: run the block until the list shows both threads.
    await eventually(async () => {
      const out = await block('lists');
      return out.includes(`${thread}-bare`) && out.includes(`${thread} `) && out.includes(childId) ? out : undefined;
    });
    const out = await block('the history, and the handlers');
    expect(out).toContain('WorkflowExecutionSignaled');
    for (const name of [
      'input',
      'user_text',
      'tool_result',
      'event',
      'report',
      'control',
      'deliver',
      'status',
      'drops',
      'transcript',
      'waitForIdle',
      'callbackState',
    ]) {
      expect(out).toContain(name);
    }
    expect(out).toContain("One input into the thread's inbox");
    expect(out).toContain('A tool result into the inbox: {"tool","text","toolCallId","threadId","id"}');
    // The current details: the last reply, and where the whole history is.
    expect(out).toContain('last reply: Build 43 is red.');
    expect(out).toContain(`full history: \`infinity-temporal history ${thread}\``);
  });

  it('drops and counts a raw signal that is not an input', async () => {
    await run(
      'temporal',
      ['workflow', 'signal', '--workflow-id', thread, '--name', 'input', '--input', '{"text":"not an input"}'],
      { env },
    );
    await eventually(async () => ((await sys.client.thread(thread).status()).dropped.malformed ?? 0) >= 1 || undefined);
    const out = await block('what the thread dropped and why');
    expect(out).toContain('"reason":"malformed","what":"input signal: input.id must be a non-empty string"');
  });
});
