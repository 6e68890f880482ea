/**
 * User text that arrives while a slice is streaming cancels the slice (docs/semantics.md §4): the partial turn is
 * committed without trailing reasoning, and the next slice starts with `<interrupt>`-prefixed text. Non-user inputs
 * never interrupt.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ModelRequest } from '../src/model/provider';
import { ScriptedModel, type ScriptedReply } from '../src/model/scripted';
import { checkReplay, eventually, historyFile, render, startTestSystem, type TestSystem, uid } from './helpers';

const LONG = 'word '.repeat(200).trim();

function script(req: ModelRequest): ScriptedReply {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user' && last.text === 'write an essay') return { text: LONG, chunks: 200, delayMs: 50 };
  if (last.role === 'user') return { text: `ok: ${last.text}` };
  return { text: 'ok' };
}

let sys: TestSystem;
const model = new ScriptedModel(script);

beforeAll(async () => {
  sys = await startTestSystem({ model });
});
afterAll(async () => {
  await sys?.shutdown();
});

it('cancels a streaming slice on user text and starts the next with <interrupt>', async () => {
  const thread = await sys.client.startThread({ threadId: uid('essay') });
  await thread.sendUserText('write an essay');
  await eventually(
    () => sys.seen.filter((e) => e.threadId === thread.threadId && e.type === 'text_delta').length >= 10,
    30_000,
    'streaming to start',
  );
  await thread.sendUserText('stop that');
  const status = await thread.waitForIdle({ settled: true });

  const lines = render(await thread.history());
  expect(lines).toHaveLength(4);
  expect(lines[0]).toBe('user: write an essay');
  // The partial turn is committed: a non-empty prefix of the full text, strictly shorter than it.
  const partial = lines[1]!.replace(/^assistant: /, '');
  expect(partial.length).toBeGreaterThan(0);
  expect(partial.length).toBeLessThan(LONG.length);
  expect(LONG.startsWith(partial)).toBe(true);
  expect(lines.slice(2)).toEqual(['user: <interrupt>stop that', 'assistant: ok: <interrupt>stop that']);
  expect(status.slices).toBe(2);

  const reqs = model.requests.filter((r) => r.threadId === thread.threadId);
  expect(reqs.at(-1)!.messages.at(-1)).toEqual({ role: 'user', text: '<interrupt>stop that' });
  // Display events strip the marker.
  expect(sys.seen).toContainEqual({ threadId: thread.threadId, type: 'user_input', text: 'stop that' });
  await checkReplay(thread, 'interrupt-streaming-slice');
});

it('does not interrupt a streaming slice for a duplicate of an earlier user text', async () => {
  const thread = await sys.client.startThread({ threadId: uid('dup-essay') });
  await thread.sendUserText('write an essay', 'essay-msg');
  await eventually(
    () => sys.seen.filter((e) => e.threadId === thread.threadId && e.type === 'text_delta').length >= 5,
    30_000,
    'streaming to start',
  );
  await thread.sendUserText('write an essay', 'essay-msg');
  const status = await thread.waitForIdle({ settled: true });
  await expect(historyFile(await thread.history())).toMatchFileSnapshot(
    '__snapshots__/interrupt/duplicate-user-text.txt',
  );
  expect(status.dropped.duplicate).toBe(1);
});
