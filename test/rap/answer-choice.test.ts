/**
 * `answerChoice` (the CLI's `answer`) POSTs only where a choice may be answered: a pending choice's `response_url` is
 * whatever the input that raised it said, so the client refuses a scheme other than http(s), credentials in the URL
 * and an origin outside its allow-list (loopback by default; `allowedOrigins` or INFINITY_CHOICE_ORIGINS otherwise),
 * and sends nothing there. Real peers on loopback record what reaches them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { choiceUrlRefusal } from '../../src/client/choice-url';
import { InvalidInputError } from '../../src/inbox/errors';
import { defineTool, type ToolContext } from '../../src/tools/tool';
import type { ThreadHandle } from '../../src/client/thread-handle';
import { eventually, startTestSystem, uid, type TestSystem } from '../helpers';
import { obedientModel, startPeer } from './fixture';

let sys: TestSystem;
const calls: ToolContext[] = [];
let peer: Awaited<ReturnType<typeof startPeer>>;
let other: Awaited<ReturnType<typeof startPeer>>;

beforeAll(async () => {
  const waitHere = defineTool({
    name: 'wait_here',
    description: 'Waits for a result that arrives later.',
    parameters: { type: 'object', properties: {} },
    execute: (_args, ctx) => void calls.push(ctx),
  });
  sys = await startTestSystem({ model: obedientModel(), tools: [waitHere] });
  const ok = (_r: unknown, res: { end(s: string): void }) => res.end('');
  peer = await startPeer(ok);
  other = await startPeer(ok);
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await peer?.close();
  await other?.close();
});

/** A thread waiting on a call, with a user choice whose response URL is `responseUrl`. */
async function choiceAt(responseUrl: string): Promise<{ thread: ThreadHandle; id: string }> {
  const thread = await sys.client.startThread({ threadId: uid('choice') });
  await thread.sendUserText('call wait_here {}');
  const call = await eventually(() => calls.find((c) => c.threadId === thread.threadId));
  const id = `choice-${calls.length}`;
  await thread.deliver({
    id: `p-${id}`,
    threadId: thread.threadId,
    content: { type: 'text', text: '' },
    synthetic: {
      type: 'prompt',
      toolCallId: call.toolCallId,
      prompt: { kind: 'user_choice', id, prompt: 'Deploy?', choices: ['yes', 'no'], default: 1, responseUrl },
    },
  });
  await eventually(async () => (await thread.status()).prompts.find((p) => p.kind === 'user_choice') || undefined);
  return { thread, id };
}

const refusal = async (p: Promise<unknown>) => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(InvalidInputError);
  return (e as Error).message;
};

describe('answerChoice', () => {
  it('posts the answer to a loopback tool server by default', async () => {
    const { thread, id } = await choiceAt(`${peer.url}/user_choice_response?key=k`);
    expect(await thread.answerChoice(id, 0)).toBe(0);
    expect(peer.requests.at(-1)).toMatchObject({ method: 'POST', path: '/user_choice_response?key=k' });
    expect(JSON.parse(peer.requests.at(-1)!.body)).toEqual({ id, selected: 0 });
  });

  it('refuses a response URL off loopback unless its origin is allowed (cloud metadata, an internal service)', async () => {
    const { thread, id } = await choiceAt('http://169.254.169.254/latest/meta-data/iam');
    expect(await refusal(thread.answerChoice(id))).toMatch(/on http:\/\/169\.254\.169\.254, not loopback/);
  });

  it('refuses credentials in the URL, and any scheme but http(s) (which inputs cannot carry either)', async () => {
    expect(choiceUrlRefusal('file:///etc/passwd', undefined)).toMatch(/must be http or https, not file:/);
    expect(choiceUrlRefusal('gopher://127.0.0.1:6379/_x', ['gopher://127.0.0.1:6379'])).toMatch(/http or https/);
    const before = peer.requests.length;
    const creds = await choiceAt(`http://user:secret@${new URL(peer.url).host}/answer`);
    expect(await refusal(creds.thread.answerChoice(creds.id))).toMatch(/must not carry credentials/);
    expect(peer.requests.length).toBe(before);
  });

  it('answers only allowed origins once allowedOrigins is given, and sends nothing elsewhere', async () => {
    const before = other.requests.length;
    const { thread, id } = await choiceAt(`${other.url}/answer`);
    expect(await refusal(thread.answerChoice(id, 0, { allowedOrigins: [peer.url] }))).toMatch(/not an allowed origin/);
    expect(other.requests.length).toBe(before);
    expect(await thread.answerChoice(id, 0, { allowedOrigins: [peer.url, other.url] })).toBe(0);
    expect(other.requests.length).toBe(before + 1);
  });

  it('takes its default allow-list from INFINITY_CHOICE_ORIGINS (what the CLI uses)', async () => {
    const saved = process.env.INFINITY_CHOICE_ORIGINS;
    process.env.INFINITY_CHOICE_ORIGINS = `https://tools.example.com, ${peer.url}`;
    try {
      const refused = await choiceAt(`${other.url}/answer`);
      expect(await refusal(refused.thread.answerChoice(refused.id))).toMatch(/not an allowed origin/);
      const allowed = await choiceAt(`${peer.url}/answer`);
      expect(await allowed.thread.answerChoice(allowed.id)).toBe(1);
    } finally {
      if (saved === undefined) delete process.env.INFINITY_CHOICE_ORIGINS;
      else process.env.INFINITY_CHOICE_ORIGINS = saved;
    }
  });
});
