/**
 * Inputs of any size up to the limit (32 MiB) reach history byte for byte while Temporal carries a reference: tool
 * results through `ctx.send` and through the RAP gateway, user text through the client and the CLI. Past the limit the
 * model reads an error result, the gateway answers 413, and the thread goes on. All on the real dev server.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import type { ThreadHandle } from '../src/client/thread-handle';
import { PayloadTooLargeError } from '../src/inbox/errors';
import type { HistoryItem, ToolResultContent } from '../src/core/types';
import { firstText } from '../src/model/projection';
import type { ModelMessage } from '../src/model/provider';
import { ScriptedModel } from '../src/model/scripted';
import { startRapGateway, type RapGateway } from '../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../src/rap/tokens';
import { createRapToolServer, type RapToolServer } from '../src/rap/tool-server';
import { loadRapToolsets } from '../src/rap/toolsets';
import { toolResult } from '../src/tools/messages';
import { defineTool } from '../src/tools/tool';
import { inputSignal } from '../src/workflows/definitions';
import { titleOf } from '../src/workflows/ui-text';
import { cliRunner } from './cli-process';
import { startTestSystem, type TestSystem, uid } from './helpers';

const MiB = 1024 * 1024;

/** About `bytes` of UTF-8: numbered lines (order matters) with two- and four-byte characters. */
function bigText(bytes: number): string {
  const line = (i: number) => `${String(i).padStart(8, '0')} ünïcødé ✓ 🚀 the quick brown fox jumps\n`;
  const per = Buffer.byteLength(line(0));
  return Array.from({ length: Math.ceil(bytes / per) }, (_, i) => line(i)).join('');
}

const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user') {
    const m = /^call (\S+) (\{.*\})$/.exec(last.text);
    return m ? { toolCall: { name: m[1]!, args: JSON.parse(m[2]!) } } : { text: `read ${last.text.length} characters` };
  }
  return { text: last.role === 'tool_result' ? `got ${firstText(last.content).length} characters` : 'ok' };
});

/** What each `ctx.send` of the tool below did: tools must never see it throw. */
const sends: Promise<string>[] = [];
const emitOutput = defineTool<{ bytes: number }>({
  name: 'emit_output',
  description: 'prints a long output',
  parameters: { type: 'object', properties: { bytes: { type: 'number' } }, required: ['bytes'] },
  execute(args, ctx) {
    sends.push(
      ctx.send(toolResult(ctx, bigText(args.bytes))).then(
        () => 'resolved',
        (e: unknown) => `threw ${String(e)}`,
      ),
    );
  },
});
const png = `iVBORw0KGgo${randomBytes(110_000).toString('base64')}`; // a 110 KB image: 147 KB of base64, staged

const tokens = new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } });
let sys: TestSystem;
let gateway: RapGateway;
let toolServer: RapToolServer;

beforeAll(async () => {
  const ref: { sys?: TestSystem } = {};
  // Past the default (the 32 MiB delivery limit), so an output over the delivery limit is read and its beginning shown.
  gateway = await startRapGateway({ tokens, deliver: (m) => ref.sys!.client.deliver(m), bodyLimit: 64 * MiB });
  toolServer = await createRapToolServer({
    name: 'large-tools',
    tools: [
      {
        name: 'rap_output',
        description: 'a long output',
        inputSchema: { type: 'object' },
        handler: (a) => bigText(Number(a.bytes)),
      },
      {
        name: 'rap_wait',
        description: 'answered by the test',
        inputSchema: { type: 'object' },
        handler: () => new Promise<void>(() => undefined),
      },
      {
        name: 'rap_image',
        description: 'an image, shown too',
        inputSchema: { type: 'object' },
        handler: () => ({
          content: [
            { type: 'text', text: 'a chart' },
            { type: 'image', data: png, mediaType: 'image/png' },
          ],
          displayAs: [
            { type: 'image', content: { data: png, mediaType: 'image/png' } },
            { type: 'text', content: 'Chart' },
          ],
        }),
      },
    ],
  });
  const rap = await loadRapToolsets({ servers: [{ url: toolServer.url, token: toolServer.token! }], gateway });
  sys = ref.sys = await startTestSystem({ model, tools: [emitOutput, ...rap.tools], toolLifecycle: [rap] });
}, 120_000);

afterAll(async () => {
  await sys?.shutdown();
  await toolServer?.close();
  await gateway?.close();
});

/**
 * Encoded payload bytes of the signal that carried `messageId`, and the input and result of the slice that committed
 * it: a local activity's marker (release 0.3: its input is not recorded at all, its result is the marker's details),
 * or a regular activity's scheduled and completed events (a slice handed off past its budget).
 */
async function temporalBytes(thread: ThreadHandle, messageId: string) {
  const events = (await thread.workflow.fetchHistory()).events ?? [];
  const size = (p: temporal.api.common.v1.IPayloads | null | undefined) =>
    p ? temporal.api.common.v1.Payloads.encode(p).finish().length : 0;
  const holds = (p: temporal.api.common.v1.IPayloads | null | undefined) =>
    (p?.payloads ?? []).some((x) =>
      Buffer.from(x.data ?? [])
        .toString()
        .includes(messageId),
    );
  const signalAt = events.findIndex((e) => holds(e.workflowExecutionSignaledEventAttributes?.input));
  const scheduled = events.find((e) => holds(e.activityTaskScheduledEventAttributes?.input));
  const completed =
    scheduled &&
    events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
  const marker = events
    .slice(signalAt + 1)
    .find((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  expect(signalAt >= 0 && (marker || (scheduled && completed))).toBeTruthy();
  const markerBytes = Object.values(marker?.markerRecordedEventAttributes?.details ?? {}).reduce(
    (n, p) => n + size(p),
    0,
  );
  const bytes = {
    signal: size(events[signalAt]!.workflowExecutionSignaledEventAttributes!.input),
    scheduled: size(scheduled?.activityTaskScheduledEventAttributes?.input),
    completed: size(completed?.activityTaskCompletedEventAttributes?.result) + markerBytes,
  };
  return { ...bytes, total: bytes.signal + bytes.scheduled + bytes.completed };
}

const stagedRows = () => {
  const db = new Database(sys.storePath, { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM staged_inputs').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

/** None of the three carries the content: each is a reference, a preview and ids (the content here is ≥ 1 MiB). */
const expectSmall = (bytes: { signal: number; scheduled: number; completed: number }) => {
  expect(bytes.signal).toBeLessThan(1024);
  expect(bytes.scheduled).toBeLessThan(1024);
  expect(bytes.completed).toBeLessThan(1024);
};

/** The model message that showed the call's result. */
const shownResult = (callId: string) =>
  model.requests
    .flatMap((r) => r.messages)
    .find((m): m is Extract<ModelMessage, { role: 'tool_result' }> => m.role === 'tool_result' && m.id === callId);

/** Starts a thread that calls `tool` and returns once the call's result is in history. */
async function callTool(tool: string, args: unknown) {
  const thread = await sys.client.startThread({ threadId: uid(tool) });
  await thread.sendUserText(`call ${tool} ${JSON.stringify(args)}`);
  await thread.waitForIdle({ settled: true });
  const history = await thread.history();
  const result = history.find((h): h is Extract<HistoryItem, { kind: 'tool_result' }> => h.kind === 'tool_result')!;
  return { thread, history, result };
}

/** History, the model and Temporal's share of one tool result of `expected` content. */
async function expectCarriedWhole(
  thread: ThreadHandle,
  result: Extract<HistoryItem, { kind: 'tool_result' }>,
  messageId: string,
  expected: ToolResultContent[],
) {
  expect(result.content).toEqual(expected);
  expect(shownResult(result.id)?.content).toEqual(expected);
  const bytes = await temporalBytes(thread, messageId);
  console.log(
    `${messageId.slice(0, 24)}…: ${Buffer.byteLength(JSON.stringify(expected))} B of content, Temporal payloads ${JSON.stringify(bytes)}`,
  );
  expectSmall(bytes);
  expect(stagedRows()).toBe(0); // the commit removed what it consumed
}

describe('large inputs', () => {
  it.each([1, 4, 16])(
    'a %i MiB tool result from ctx.send reaches history and the model whole, by reference',
    async (mib) => {
      const { thread, result } = await callTool('emit_output', { bytes: mib * MiB });
      expect(await sends[sends.length - 1]).toBe('resolved');
      await expectCarriedWhole(thread, result, `${result.id}-result`, [{ type: 'text', text: bigText(mib * MiB) }]);
    },
  );

  it.each([1, 4, 16])(
    'a %i MiB tool result through the RAP gateway reaches history and the model whole',
    async (mib) => {
      const { thread, result, history } = await callTool('rap_output', { bytes: mib * MiB });
      await expectCarriedWhole(thread, result, `rap-tool-result-${result.id}`, [
        { type: 'text', text: bigText(mib * MiB) },
      ]);
      expect(history[history.length - 1]).toEqual({
        kind: 'assistant',
        text: `got ${bigText(mib * MiB).length} characters`,
      });
    },
  );

  it('keeps a staged image once: in the content, not again among the display segments', async () => {
    const { thread, result } = await callTool('rap_image', {});
    await expectCarriedWhole(thread, result, `rap-tool-result-${result.id}`, [
      { type: 'text', text: 'a chart' },
      { type: 'image', data: png, mediaType: 'image/png' },
    ]);
    expect(result.displayAs).toEqual([{ type: 'text', content: 'Chart' }]);
  });

  it('commits a 1 MiB user text whole and titles the thread from its start', async () => {
    const thread = await sys.client.startThread({ threadId: uid('user') });
    const text = `Summarize this log.\n${bigText(MiB)}`;
    const id = await thread.sendUserText(text);
    await thread.waitForIdle();
    expect(await thread.history()).toEqual([
      { kind: 'user', text },
      { kind: 'assistant', text: `read ${text.length} characters` },
    ]);
    expect(model.requests.some((r) => r.messages.some((m) => m.role === 'user' && m.text === text))).toBe(true);
    expectSmall(await temporalBytes(thread, id));
    // The workflow saw the preview: the title reads as the whole text's would.
    expect((await thread.workflow.describe()).memo?.title).toBe(titleOf(text));
  });

  it('answers an output over 32 MiB with an error result the model reads; the gateway says 413; the thread goes on', async () => {
    const big = bigText(33 * MiB);
    const head = big.slice(0, 4096);
    const sent = await callTool('emit_output', { bytes: 33 * MiB });
    expect(await sends[sends.length - 1]).toBe('resolved'); // ctx.send did not throw inside the tool
    const text = firstText(sent.result.content);
    expect(text).toMatch(
      /^Error: the tool's output was not delivered: it is 3\d{7} bytes \(3\d\.\d MiB\), over the limit of 33554432 bytes \(32\.0 MiB\)/,
    );
    expect(text.endsWith(`Its first 4096 characters:\n\n${head}`)).toBe(true);
    expect(shownResult(sent.result.id)?.content).toEqual(sent.result.content);

    const thread = await sys.client.startThread({ threadId: uid('rap-big') });
    await thread.sendUserText('call rap_wait {}');
    const callId = (await thread.waitForIdle()).pendingCall!.id;
    const body = JSON.stringify({ type: 'tool_result', group_id: thread.threadId, id: callId, text: big });
    const res = await fetch(gateway.callbackUrl(thread.threadId, callId), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toMatch(
      /exceeds the limit of 33554432 bytes; the call was answered/,
    );
    await thread.waitForIdle({ settled: true });
    const answered = (await thread.history()).find((h) => h.kind === 'tool_result');
    expect(answered).toMatchObject({
      id: callId,
      content: [{ type: 'text', text: expect.stringContaining(`over the limit of 33554432 bytes`) }],
    });
    expect(firstText((answered as { content: ToolResultContent[] }).content).endsWith(head)).toBe(true);

    for (const t of [sent.thread, thread]) {
      await t.sendUserText('still there?');
      await t.waitForIdle();
      expect((await t.history()).slice(-2)).toEqual([
        { kind: 'user', text: 'still there?' },
        { kind: 'assistant', text: 'read 12 characters' },
      ]);
    }
  });

  it('answers a callback over the gateway body limit without reading it', async () => {
    const small = await startRapGateway({ tokens, deliver: (m) => sys.client.deliver(m), bodyLimit: MiB });
    try {
      const thread = await sys.client.startThread({ threadId: uid('rap-unread') });
      await thread.sendUserText('call rap_wait {}');
      const callId = (await thread.waitForIdle()).pendingCall!.id;
      const post = (text: string) =>
        fetch(small.callbackUrl(thread.threadId, callId), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'tool_result', group_id: thread.threadId, id: callId, text }),
        });
      const huge = await post(bigText(2 * MiB));
      expect(huge.status).toBe(413);
      await thread.waitForIdle({ settled: true });
      const bytes = Buffer.byteLength(
        JSON.stringify({ type: 'tool_result', group_id: thread.threadId, id: callId, text: bigText(2 * MiB) }),
      );
      const text = `Error: the tool's output was not delivered: its callback of ${bytes} bytes is over the gateway's limit of ${MiB} bytes, so it was not read.`;
      expect((await thread.history()).slice(-2)).toEqual([
        { kind: 'tool_result', id: callId, content: [{ type: 'text', text }] },
        { kind: 'assistant', text: `got ${text.length} characters` },
      ]);
      expect((await post('a late small result')).status).toBe(409); // the call has its answer
    } finally {
      await small.close();
    }
  });

  it('sends a 1 MiB file with the CLI (`send --file`), and delivers one from stdin (`deliver --file -`)', async () => {
    const file = join(inject('scratchDir'), `${uid('input')}.txt`);
    const text = bigText(MiB);
    writeFileSync(file, text);
    const globals = ['--address', inject('temporalAddress'), '--task-queue', sys.taskQueue, '--store', sys.storePath];
    const cli = cliRunner(() => globals, {});
    const threadId = uid('cli-file');
    const sent = await cli.run('send', threadId, '--file', file);
    expect(sent).toMatchObject({ code: 0, stderr: '' });
    const thread = sys.client.thread(threadId);
    await thread.waitForIdle();
    expect((await thread.history())[0]).toEqual({ kind: 'user', text });
    expectSmall(await temporalBytes(thread, sent.stdout.trim()));
    expect(await cli.run('send', threadId, 'words', '--file', file)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('not both'),
    });

    const waiting = await sys.client.startThread({ threadId: uid('cli-stdin') });
    await waiting.sendUserText('call rap_wait {}');
    const callId = (await waiting.waitForIdle()).pendingCall!.id;
    const child = spawn(process.execPath, [
      join(__dirname, '..', 'bin', 'infinity-temporal.cjs'),
      ...globals,
      'deliver',
      waiting.threadId,
      '--call',
      callId,
      '--file',
      '-',
    ]);
    child.stdin.end(text);
    expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0);
    await waiting.waitForIdle({ settled: true });
    expect((await waiting.history()).find((h) => h.kind === 'tool_result')).toEqual({
      kind: 'tool_result',
      id: callId,
      content: [{ type: 'text', text }],
    });
  });

  it('keeps the 256 KiB limit for a client without a store, and the workflow drops a malformed reference', async () => {
    const bare = new AgentClient({ client: sys.temporal, taskQueue: sys.taskQueue });
    const thread = await bare.startThread({ threadId: uid('bare') });
    const refused = await thread.sendUserText(bigText(300 * 1024)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PayloadTooLargeError);
    expect(refused).toMatchObject({ limit: 256 * 1024 });
    await thread.workflow.signal(inputSignal, {
      id: 'forged',
      threadId: thread.threadId,
      content: { type: 'text', text: 'hi', staged: { id: 'x', sha256: 'no', bytes: 1 } },
    });
    await thread.sendUserText('hello');
    const status = await thread.waitForIdle();
    expect(status.dropped).toEqual({ malformed: 1 });
    expect(await sys.client.thread(thread.threadId).history()).toEqual([
      { kind: 'user', text: 'hello' },
      { kind: 'assistant', text: 'read 5 characters' },
    ]);
  });
});
