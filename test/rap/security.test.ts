/**
 * Authentic events: 1,000 forged or mutated callbacks against a live thread waiting on a RAP call. Every one is
 * refused, the thread's history and status do not change, and the gateway still delivers the genuine result after.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, render, uid } from '../helpers';
import { type RapSystem, startRapSystem } from './fixture';
import type { ThreadHandle } from '../../src/client/thread-handle';

let rap: RapSystem;
let callbackUrl = '';
let callId = '';

beforeAll(async () => {
  rap = await startRapSystem([
    {
      name: 'long_job',
      description: 'A job whose callback URL the test keeps.',
      inputSchema: { type: 'object' },
      handler: async () => new Promise<void>(() => undefined), // never answers by itself
    },
  ]);
}, 60_000);

afterAll(async () => {
  await rap?.close();
});

const mutate = (s: string, i: number) => {
  const chars = s.split('');
  const at = i % chars.length;
  chars[at] = chars[at] === 'A' ? 'B' : 'A';
  return chars.join('');
};

describe('callback gateway under attack', () => {
  it('refuses 1,000 forged or mutated callbacks without touching the thread', async () => {
    const thread: ThreadHandle = await rap.sys.client.startThread({ threadId: uid('victim') });
    const other = await rap.sys.client.startThread({ threadId: uid('other') });
    await thread.sendUserText('call long_job {}');
    await other.sendUserText('call long_job {}');
    await thread.waitForIdle();
    await other.waitForIdle();
    callId = (await thread.status()).pendingCall!.id;
    const otherCall = (await other.status()).pendingCall!.id;
    callbackUrl = rap.gateway.callbackUrl(thread.threadId, callId);
    const otherUrl = rap.gateway.callbackUrl(other.threadId, otherCall);
    const token = callbackUrl.slice(callbackUrl.lastIndexOf('/') + 1);
    const base = callbackUrl.slice(0, callbackUrl.lastIndexOf('/') + 1);
    const historyBefore = render(await thread.history());
    const statusBefore = await thread.status();

    const good = { type: 'tool_result', group_id: thread.threadId, id: callId, text: 'forged result' };
    const attacks: { url: string; body: string; contentType?: string }[] = [];
    const json = (b: unknown) => JSON.stringify(b);
    for (let i = 0; attacks.length < 1000; i++) {
      switch (i % 10) {
        case 0: // a random token
          attacks.push({ url: base + randomBytes(48).toString('base64url'), body: json(good) });
          break;
        case 1: // one character of the real token changed
          attacks.push({ url: base + mutate(token, i * 7), body: json(good) });
          break;
        case 2: // the real token with a mutated body aimed at another call
          attacks.push({ url: callbackUrl, body: json({ ...good, id: `${callId}x${i}` }) });
          break;
        case 3: // the real token, another thread's group_id
          attacks.push({ url: callbackUrl, body: json({ ...good, group_id: other.threadId }) });
          break;
        case 4: // another thread's valid token, aimed at the victim
          attacks.push({ url: otherUrl, body: json(good) });
          break;
        case 5: // malformed JSON
          attacks.push({ url: callbackUrl, body: `{"type":"tool_result","group_id":"${thread.threadId}",` });
          break;
        case 6: // a large body on a forged token: refused before it is read (a genuine URL's output of any size is
          // answered, over the limit with an error result and 413: test/large-inputs.test.ts)
          attacks.push({
            url: base + randomBytes(48).toString('base64url'),
            body: json({ ...good, text: 'x'.repeat(1_100_000 + i) }),
          });
          break;
        case 7: // unknown callback type
          attacks.push({ url: callbackUrl, body: json({ ...good, type: 'tool_result_v2' }) });
          break;
        case 8: // an expired token signed with the real key
          attacks.push({
            url: base + rap.tokens.mint({ threadId: thread.threadId, callId, expiresAt: Date.now() - 1000 }),
            body: json(good),
          });
          break;
        case 9: // not JSON at all
          attacks.push({
            url: callbackUrl,
            body: 'id=1&text=forged',
            contentType: 'application/x-www-form-urlencoded',
          });
          break;
      }
    }
    const statuses = new Map<number, number>();
    for (let i = 0; i < attacks.length; i += 50) {
      const batch = attacks.slice(i, i + 50).map(async (a) => {
        const res = await fetch(a.url, {
          method: 'POST',
          headers: { 'content-type': a.contentType ?? 'application/json' },
          body: a.body,
        });
        await res.body?.cancel();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      });
      await Promise.all(batch);
    }
    expect([...statuses.keys()].sort()).toEqual([400, 401, 403, 415]);
    expect([...statuses.values()].reduce((a, b) => a + b)).toBe(1000);

    expect(render(await thread.history())).toEqual(historyBefore);
    const statusAfter = await thread.status();
    expect(statusAfter).toMatchObject({
      status: statusBefore.status,
      pendingCall: statusBefore.pendingCall,
      historyLength: statusBefore.historyLength,
      dropped: {},
    });

    // The genuine callback still works, exactly once; a replay after the thread recorded it finds the URL revoked.
    const real = await fetch(callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json({ ...good, text: 'the real result' }),
    });
    expect(real.status).toBe(200);
    await thread.waitForIdle({ settled: true });
    const replay = await fetch(callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json({ ...good, text: 'the real result' }),
    });
    expect(replay.status).toBe(410);
    await eventually(async () => (await thread.status()).status === 'idle' || undefined);
    expect(render(await thread.history()).slice(-2)).toEqual([
      'result #1: the real result',
      'assistant: got: the real result',
    ]);
  }, 120_000);
});
