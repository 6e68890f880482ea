/**
 * One signal name per kind of input (decision 62), on the real dev server: with `signalNames: 'by-kind'` user texts,
 * tool results, events and children's reports arrive as `user_text`, `tool_result`, `event` and `report`, readable
 * part first, and all feed the one inbox; by default every input still goes by `input`. The new names take their
 * readable payloads from any sender (the temporal CLI), a bad one is dropped and shown (`drops`). (Why the default
 * stayed `input` in 0.5, a 0.4 worker leaving a `user_text` signal unread, is outside release 0.13's window.)
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { subscriptionEvent } from '../src/tools/messages';
import type { DroppedInputs } from '../src/core/types';
import { treeScript, treeTools } from './fixtures/tree-script';
import { checkReplay, eventually, greenBuildTool, render, startTestSystem, uid } from './helpers';

type History = { events?: temporal.api.history.v1.IHistoryEvent[] | null };

/** Each signal of a history: its name and its payload, decoded (key order as sent). */
function signals(history: History): { name: string; payload: Record<string, unknown> }[] {
  return (history.events ?? []).flatMap((e) => {
    const a = e.workflowExecutionSignaledEventAttributes;
    return a
      ? [
          {
            name: a.signalName ?? '',
            payload: defaultPayloadConverter.fromPayload<Record<string, unknown>>(a.input!.payloads![0]!),
          },
        ]
      : [];
  });
}

describe('signals by kind', () => {
  it('sends each input by its kind, readable part first, into the one inbox; children report by `report`', async () => {
    const sys = await startTestSystem({
      model: new ScriptedModel(treeScript),
      tools: [greenBuildTool(), ...treeTools()],
      signalNames: 'by-kind',
      threadOptions: { titleSearchAttribute: true },
    });
    try {
      const threadId = uid('kinds');
      await sys.client.sendUserText(threadId, 'call get_build_status {"build_id":"42"}');
      const thread = sys.client.thread(threadId);
      await thread.waitForIdle({ settled: true });
      await thread.sendUserText('call watch {"topic":"ci"}');
      await thread.waitForIdle({ settled: true });
      const watch = (await thread.history()).find((i) => i.kind === 'tool_call' && i.name === 'watch')!;
      if (watch.kind !== 'tool_call') throw new Error('no watch call');
      await sys.client.deliver(
        subscriptionEvent({ threadId, toolCallId: watch.id }, 'build 43 started', { associative: true }),
      );
      await eventually(async () =>
        (await thread.history()).some((i) => i.kind === 'assistant' && i.text === 'noted: build 43 started'),
      );
      await thread.sendUserText('spawn report:Collect the flaky tests');
      // Two reports: the child's, then its closing one. Waiting for the thread to be idle after the first is not
      // enough: the child may still be closing (seen once under load, the second report not yet sent).
      await eventually(
        async () =>
          (await thread.history()).filter((i) => i.kind === 'subscription_event' && i.childThreadId !== undefined)
            .length >= 2,
        60_000,
        'both reports',
      );
      await thread.waitForIdle({ settled: true });

      const sent = signals(await thread.workflow.fetchHistory());
      expect(sent.map((s) => s.name)).toEqual([
        'user_text',
        'tool_result',
        'user_text',
        'tool_result',
        'event',
        'user_text',
        'report',
        'report',
      ]);
      const [text, result] = sent;
      expect(Object.keys(text!.payload)).toEqual(['text', 'threadId', 'id']);
      expect(text!.payload.text).toBe('call get_build_status {"build_id":"42"}');
      expect(Object.entries(result!.payload).slice(0, 2)).toEqual([
        ['tool', 'get_build_status'],
        ['text', 'Build 42: green'],
      ]);
      expect(Object.keys(sent[4]!.payload)[0]).toBe('text');
      // A report: its text first, then the child it is from.
      const [child] = (await thread.status()).children;
      expect(Object.keys(sent[6]!.payload)).toEqual(['text', 'childThreadId', 'toolCallId', 'threadId', 'id']);
      expect(sent[6]!.payload).toMatchObject({
        text: 'Report from child thread: Collect the flaky tests',
        childThreadId: child,
      });

      // Every one of them reached the conversation, in order.
      const lines = render(await thread.history());
      expect(lines.slice(0, 8)).toEqual([
        'user: call get_build_status {"build_id":"42"}',
        'call #1 get_build_status {"build_id":"42"}',
        'result #1: Build 42: green',
        'assistant: ok: Build 42: green',
        'user: call watch {"topic":"ci"}',
        'call #2 watch {"topic":"ci"}',
        'result #2: watching',
        'assistant: ok: watching',
      ]);
      expect(lines).toContain('assistant: noted: build 43 started');

      // Titles as the UI lists them: the root's from its first text (at start), the child's from its instructions.
      const description = await thread.workflow.describe();
      expect(description.searchAttributes.Title).toEqual(['call get_build_status {"build_id":"42"}']);
      expect(await description.staticSummary()).toBe('call get_build_status {"build_id":"42"}');
      const childDescription = await sys.temporal.workflow.getHandle(child!).describe();
      expect(childDescription.searchAttributes.Title).toEqual(['report:Collect the flaky tests']);
      expect(await childDescription.staticSummary()).toBe('report:Collect the flaky tests');
      expect(await childDescription.staticDetails()).toBe(
        `child thread of \`${threadId}\`\n\nreport:Collect the flaky tests`,
      );
      await checkReplay(thread, 'signals-by-kind');
    } finally {
      await sys.shutdown();
    }
  });

  it('sends every input by `input` by default', async () => {
    const sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [greenBuildTool()] });
    try {
      const threadId = uid('input');
      await sys.client.sendUserText(threadId, 'call get_build_status {"build_id":"7"}');
      const thread = sys.client.thread(threadId);
      await thread.waitForIdle({ settled: true });
      const sent = signals(await thread.workflow.fetchHistory());
      expect(sent.map((s) => s.name)).toEqual(['input', 'input']);
      expect(Object.keys(sent[0]!.payload)).toEqual(['id', 'threadId', 'content']);
      expect((await thread.workflow.describe()).searchAttributes.Title).toBeUndefined();
    } finally {
      await sys.shutdown();
    }
  });

  it('takes readable payloads from any sender, and shows what it dropped and why', async () => {
    const sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [greenBuildTool()] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('raw') });
      const raw = sys.temporal.workflow.getHandle(thread.threadId);
      await raw.signal('user_text', { text: 'hello there', threadId: thread.threadId, id: 'u1' });
      await thread.waitForIdle();
      // No toolCallId: not a tool result. And a user text for another thread.
      await raw.signal('tool_result', {
        tool: 'get_build_status',
        text: 'green',
        threadId: thread.threadId,
        id: 'r-bad',
      });
      await raw.signal('user_text', { text: 'lost', threadId: 'elsewhere', id: 'u-bad' });
      await raw.signal('input', { text: 'not an input message', threadId: thread.threadId, id: 'i-bad' });
      const drops = await eventually(async () => {
        const d = await thread.workflow.query<DroppedInputs>('drops');
        return d.recent.length === 3 ? d : undefined;
      });
      expect(drops.counts).toEqual({ malformed: 3 });
      expect(drops.recent).toEqual([
        {
          id: 'r-bad',
          reason: 'malformed',
          what: 'tool_result signal: input.content.toolCallId must be a non-empty string',
        },
        { id: 'u-bad', reason: 'malformed', what: "user_text signal: names thread 'elsewhere'" },
        { id: 'i-bad', reason: 'malformed', what: 'input signal: input.content must be an object' },
      ]);
      expect(render(await thread.history())).toEqual(['user: hello there', 'assistant: ok: hello there']);
      expect(await thread.workflow.query<string[]>('transcript')).toEqual([
        'user: hello there',
        'assistant: ok: hello there',
      ]);
      const details =
        ((await thread.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ??
        '';
      expect(details).toContain(
        'dropped lately (`drops` query): tool_result signal: input.content.toolCallId must be a non-empty string (id r-bad): malformed;',
      );
      expect(details).toContain(`full history: \`infinity-temporal history ${thread.threadId}\``);
    } finally {
      await sys.shutdown();
    }
  });

  it('takes a readable payload without threadId and id: this thread, and a new id each (0.6)', async () => {
    const sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [greenBuildTool()] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('bare') });
      const raw = sys.temporal.workflow.getHandle(thread.threadId);
      // What a person types: `temporal workflow signal --name user_text --input '{"text": "hello there"}'`.
      await raw.signal('user_text', { text: 'hello there' });
      await thread.waitForIdle({ settled: true });
      await raw.signal('user_text', { text: 'hello again' });
      await thread.waitForIdle({ settled: true });
      expect(render(await thread.history())).toEqual([
        'user: hello there',
        'assistant: ok: hello there',
        'user: hello again',
        'assistant: ok: hello again',
      ]);
      expect((await thread.status()).dropped).toEqual({});
      await checkReplay(thread, 'signal-names-bare-user-text');
    } finally {
      await sys.shutdown();
    }
  });

  it("takes a raw signal whole up to the server's payload limit, which refuses a larger one (docs/security.md)", async () => {
    const sys = await startTestSystem({ model: new ScriptedModel(treeScript), tools: [greenBuildTool()] });
    try {
      const thread = await sys.client.startThread({ threadId: uid('raw-size') });
      const raw = sys.temporal.workflow.getHandle(thread.threadId);
      const big = `${'ünïcødé '.repeat(40_000)}end`; // ~400 KB of UTF-8: over the client's 256 KiB, under 2 MiB
      await raw.signal('user_text', { text: big });
      await thread.waitForIdle({ settled: true });
      const first = (await thread.history())[0];
      expect(first?.kind === 'user' && first.text).toBe(big);
      // The dev server's limit.blobSize.error (2 MiB): refused at the server, nothing reaches the thread.
      const refused: unknown = await raw.signal('user_text', { text: 'x'.repeat(2_200_000) }).catch((e: unknown) => e);
      const causes: string[] = [];
      for (let e: unknown = refused; e instanceof Error; e = e.cause) causes.push(e.message);
      expect(causes.join(' / ')).toMatch(/size exceeds limit/i);
      await thread.waitForIdle({ settled: true });
      expect((await thread.history()).filter((i) => i.kind === 'user')).toHaveLength(1);
    } finally {
      await sys.shutdown();
    }
  });
});
