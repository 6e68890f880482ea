/**
 * Poison shapes never wedge a thread: an input (or new thread's metadata) nested thousands deep, very wide, or with
 * huge strings outside its content is refused with `InvalidInputError` by the client, exit code 2 by the CLI and 400 by
 * the RAP gateway, before anything recursive touches it (JSON.stringify overflows the stack at a few thousand levels,
 * as the first test shows). The thread is untouched and goes on answering.
 */
import { writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { InvalidInputError } from '../src/inbox/errors';
import { DEFAULT_INPUT_LIMITS, inputLimitViolation, validateInputMessage } from '../src/core/validate';
import type { InputMessage } from '../src/core/types';
import { firstText } from '../src/model/projection';
import { ScriptedModel } from '../src/model/scripted';
import { startRapGateway, type RapGateway } from '../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../src/rap/tokens';
import type { ToolContext } from '../src/tools/tool';
import { cliRunner } from './cli-process';
import { recordingTool, render, startTestSystem, type TestSystem, uid } from './helpers';

/** `depth` objects nested in one another, built iteratively (a recursive builder would overflow first). */
function nest(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < depth; i++) v = { d: v };
  return v;
}
/** The same as JSON text, without JSON.stringify (which overflows on it). */
const nestJson = (depth: number) => `${'{"d":'.repeat(depth - 1)}{"leaf":true}${'}'.repeat(depth - 1)}`;

const text = (threadId: string, t: string, extra: Partial<InputMessage> = {}): InputMessage => ({
  id: randomUUID(),
  threadId,
  content: { type: 'text', text: t },
  ...extra,
});

describe('inputLimitViolation', () => {
  const input = (metadata: unknown) => ({ id: 'i', threadId: 't', content: { type: 'text', text: 'hi' }, metadata });

  it('accepts ordinary inputs and nesting up to the limit; refuses one level more', () => {
    expect(
      inputLimitViolation(input({ user_id: 'u1', tags: ['a', 'b'], nested: { a: [1, { b: null }] } })),
    ).toBeUndefined();
    // The input is level 1 and its metadata level 2: metadata of maxDepth - 1 levels just fits.
    expect(inputLimitViolation(input(nest(DEFAULT_INPUT_LIMITS.maxDepth - 1)))).toBeUndefined();
    expect(inputLimitViolation(input(nest(DEFAULT_INPUT_LIMITS.maxDepth)))).toBe(
      `metadata.d.d.d…(${DEFAULT_INPUT_LIMITS.maxDepth - 6} more)…d.d is nested more than 128 levels deep`,
    );
  });

  it('walks depths that overflow JSON.stringify, objects and arrays alike, without recursing', () => {
    expect(() => JSON.stringify(nest(10_000))).toThrow(RangeError);
    expect(inputLimitViolation(input(nest(1_000_000)))).toMatch(
      /^metadata\.d\.d\.d…\(\d+ more\)…d\.d is nested more than 128 levels deep$/,
    );
    let arrays: unknown = [];
    for (let i = 0; i < 1_000_000; i++) arrays = [arrays];
    expect(inputLimitViolation(input({ a: arrays }))).toMatch(
      /^metadata\.a\[0\]\[0\]…\(\d+ more\)…\[0\]\[0\] is nested more than 128 levels deep$/,
    );
  });

  it('refuses wide objects and arrays, and too many entries in all', () => {
    const wide = Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`k${i}`, i]));
    expect(inputLimitViolation(input({ wide }))).toBe('metadata.wide has 10001 keys, over the limit of 10000');
    expect(inputLimitViolation(input({ list: new Array(10_001).fill(0) }))).toBe(
      'metadata.list has 10001 elements, over the limit of 10000',
    );
    // A sparse array claims its length without holding it: refused without walking 2^31 holes.
    expect(inputLimitViolation(input({ sparse: new Array(2 ** 31) }))).toBe(
      `metadata.sparse has ${2 ** 31} elements, over the limit of 10000`,
    );
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`l${i}`, new Array(9_500).fill(0)]));
    expect(inputLimitViolation(input(many))).toBe('the input has more than 100000 keys and elements in all');
  });

  it('refuses long strings outside the content, never the content itself', () => {
    const long = 'x'.repeat(DEFAULT_INPUT_LIMITS.maxStringLength + 1);
    expect(inputLimitViolation(input({ note: long }))).toBe(
      `metadata.note is a string of ${long.length} characters, over the limit of 65536`,
    );
    expect(inputLimitViolation({ id: long, threadId: 't', content: { type: 'text', text: 'x' } })).toMatch(
      /^id is a string/,
    );
    const big = 'y'.repeat(1_000_000);
    expect(inputLimitViolation({ id: 'i', threadId: 't', content: { type: 'text', text: big } })).toBeUndefined();
    const result = {
      id: 'i',
      threadId: 't',
      content: {
        type: 'tool_result',
        toolCallId: 'c',
        content: [
          { type: 'text', text: big },
          { type: 'image', data: big, mediaType: 'image/png' },
        ],
      },
      displayAs: [
        { type: 'text', content: big },
        { type: 'diff', content: { path: 'a', patch: big } },
        { type: 'image', content: { data: big, mediaType: 'image/png' } },
      ],
    };
    expect(inputLimitViolation(result)).toBeUndefined();
    // Only at the input's own content paths: the same names inside metadata are metadata.
    expect(inputLimitViolation(input({ content: { text: big } }))).toMatch(
      /^metadata\.content\.text is a string of 1000000 characters/,
    );
    expect(inputLimitViolation({ metadata: { content: { text: big } } })).toMatch(
      /^metadata\.content\.text is a string/,
    );
  });

  it('leaves validateInputMessage safe on deep values it quotes in its messages', () => {
    const v = validateInputMessage({ id: 'i', threadId: 't', content: { type: nest(100_000) } });
    expect(v).toEqual({ ok: false, error: "input.content.type must be 'text' or 'tool_result', got an object" });
    const w = validateInputMessage({
      id: 'i',
      threadId: 't',
      content: { type: 'text', text: '' },
      synthetic: { type: [nest(100_000)] },
    });
    expect(w).toEqual({ ok: false, error: 'input.unknown synthetic type an array' });
  });

  it('ends on a cycle, names odd keys readably, and takes other limits', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(inputLimitViolation(input(cyclic))).toMatch(/nested more than 128 levels deep$/);
    expect(inputLimitViolation({ metadata: { 'odd key': { 'x.y': nest(3) } } }, { maxDepth: 4 })).toBe(
      'metadata["odd key"]["x.y"].d is nested more than 4 levels deep',
    );
    expect(inputLimitViolation({ metadata: { a: [1, 2, 3] } }, { maxEntries: 2 })).toBe(
      'metadata.a has 3 elements, over the limit of 2',
    );
  });
});

describe('poison inputs through the client, the CLI and the RAP gateway', () => {
  const calls: ToolContext[] = [];
  const model = new ScriptedModel((req) => {
    const last = req.messages[req.messages.length - 1]!;
    if (last.role === 'tool_result') return { text: `got: ${firstText(last.content)}` };
    const said = last.role === 'user' ? last.text : '';
    return said === 'wait for it' ? { toolCall: { name: 'wait_for', args: {} } } : { text: `ok: ${said}` };
  });
  let sys: TestSystem;
  let gateway: RapGateway;
  const cli = cliRunner(
    () => ['--address', inject('temporalAddress'), '--task-queue', sys.taskQueue, '--store', sys.storePath],
    {},
  );

  beforeAll(async () => {
    sys = await startTestSystem({ model, tools: [recordingTool('wait_for', calls)] });
    gateway = await startRapGateway({
      tokens: new CallbackTokens({ current: 'k1', keys: { k1: newCallbackKey() } }),
      deliver: (m) => sys.client.deliver(m),
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await sys?.shutdown();
  });

  /** A thread that answered `hello`; returns it with its status. */
  async function answeringThread(prefix: string) {
    const thread = await sys.client.startThread({ threadId: uid(prefix) });
    await thread.sendUserText('hello');
    return { thread, before: await thread.waitForIdle() };
  }

  it('accepts and commits 100 levels of metadata; the thread answers', async () => {
    const { thread } = await answeringThread('deep-100');
    await thread.deliver(text(thread.threadId, 'deep 100', { metadata: nest(100) }));
    const s = await thread.waitForIdle();
    expect(s.lastError).toBeUndefined();
    expect(render(await thread.history())).toEqual([
      'user: hello',
      'assistant: ok: hello',
      'user: deep 100',
      'assistant: ok: deep 100',
    ]);
  });

  it('refuses 5,000 and 10,000 levels with InvalidInputError, in deliver and startThread; the thread is untouched', async () => {
    const { thread, before } = await answeringThread('deep-client');
    for (const depth of [5_000, 10_000]) {
      const err = await thread
        .deliver(text(thread.threadId, `deep ${depth}`, { metadata: nest(depth) }))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toMatch(
        /^invalid input: metadata\.d\.d\.d…\(\d+ more\)…d\.d is nested more than 128 levels deep$/,
      );
    }
    const fresh = uid('deep-start');
    await expect(sys.client.startThread({ threadId: fresh, metadata: nest(10_000) })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(sys.client.thread(fresh).status()).rejects.toThrow(/does not exist/);
    await thread.sendUserText('still there?');
    const after = await thread.waitForIdle();
    expect(after).toMatchObject({ historyLength: before.historyLength + 2, slices: before.slices + 1 });
    expect(after.dropped).toEqual(before.dropped);
    expect(render(await thread.history()).slice(-2)).toEqual(['user: still there?', 'assistant: ok: still there?']);
  });

  it('drops raw signals (no client checks) nested 80,000 deep as malformed; the thread answers', async () => {
    const { thread, before } = await answeringThread('deep-raw');
    // Past the client's payload converter (whose JSON.stringify would overflow): a payload written by hand.
    const signal = (json: string) =>
      sys.temporal.workflowService.signalWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: thread.threadId },
        signalName: 'input',
        identity: 'input-limits test',
        requestId: randomUUID(),
        input: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(json) }] },
      });
    // An invalid type quoted in the validator's message, and deep metadata on an otherwise valid text.
    await signal(`{"id":"${randomUUID()}","threadId":"${thread.threadId}","content":{"type":${nestJson(80_000)}}}`);
    await signal(
      `{"id":"${randomUUID()}","threadId":"${thread.threadId}","content":{"type":"text","text":"deep"},"metadata":${nestJson(80_000)}}`,
    );
    await thread.sendUserText('after the raw ones');
    const after = await thread.waitForIdle();
    expect(after.dropped.malformed).toBe((before.dropped.malformed ?? 0) + 2);
    expect(render(await thread.history()).slice(2)).toEqual([
      'user: after the raw ones',
      'assistant: ok: after the raw ones',
    ]);
  });

  it('the CLI exits 2 with the reason for a deep --message file and deep --metadata', async () => {
    const { thread, before } = await answeringThread('deep-cli');
    for (const depth of [5_000, 10_000]) {
      const file = join(inject('scratchDir'), `deep-${depth}-${randomUUID()}.json`);
      writeFileSync(
        file,
        `{"id":"${randomUUID()}","content":{"type":"text","text":"deep"},"metadata":${nestJson(depth)}}`,
      );
      const r = await cli.run('deliver', thread.threadId, '--message', file);
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr).toMatch(
        /invalid input: metadata\.d\.d\.d…\(\d+ more\)…d\.d is nested more than 128 levels deep/,
      );
    }
    const started = await cli.run('start', 'hi', '--thread-id', uid('deep-cli-start'), '--metadata', nestJson(10_000));
    expect(started.code).toBe(2);
    expect(started.stderr).toContain('is nested more than 128 levels deep');
    const untouched = await thread.status();
    expect(untouched).toMatchObject({ historyLength: before.historyLength, slices: before.slices });
    expect(untouched.dropped).toEqual(before.dropped);
    await thread.sendUserText('and now?');
    await thread.waitForIdle();
    expect(render(await thread.history()).slice(-1)).toEqual(['assistant: ok: and now?']);
  });

  it('the RAP gateway answers 400 with the reason, and the call is still answerable', async () => {
    const { thread } = await answeringThread('deep-rap');
    await thread.sendUserText('wait for it');
    const waiting = await thread.waitForIdle();
    expect(waiting.status).toBe('waiting_tool');
    const callId = calls.find((c) => c.threadId === thread.threadId)!.toolCallId;
    const post = (body: string) =>
      fetch(gateway.callbackUrl(thread.threadId, callId), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const deep = await post(
      `{"type":"tool_result","group_id":"${thread.threadId}","id":"${callId}","text":"done","display_as":[{"type":"text","content":${nestJson(10_000)}}]}`,
    );
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: string }).error).toMatch(
      /^Bad request: displayAs\[0\]\.content\.d…\(\d+ more\)…d\.d is nested more than 128 levels deep$/,
    );
    const untouched = await thread.status();
    expect(untouched).toMatchObject({ status: 'waiting_tool', historyLength: waiting.historyLength });
    expect(untouched.dropped).toEqual(waiting.dropped);

    const ok = await post(JSON.stringify({ type: 'tool_result', group_id: thread.threadId, id: callId, text: 'done' }));
    expect(ok.status).toBe(200);
    await thread.waitForIdle();
    expect(render(await thread.history()).slice(-1)).toEqual(['assistant: got: done']);
  });
});
