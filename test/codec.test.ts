/**
 * Encrypted payloads: a thread runs with every Temporal payload encrypted, Temporal's history shows only ciphertext,
 * and the codec endpoint decodes it for an authorized caller (the UI) and for no one else.
 */
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { startCodecServer, loopbackOrigins } from '../src/codec/codec-server';
import { ENCRYPTED_ENCODING, EncryptionCodec } from '../src/codec/encryption-codec';
import { ScriptedModel } from '../src/model/scripted';
import { greenBuildTool, render, startTestSystem, uid } from './helpers';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const encoding = (p: Payload) => Buffer.from(p.metadata?.encoding ?? []).toString();

describe('EncryptionCodec', () => {
  it('round-trips, rejects tampering and unknown keys, and decrypts after a key rotation', async () => {
    const before = new EncryptionCodec({ current: 'k1', keys: { k1 } });
    const plain = defaultPayloadConverter.toPayload({ secret: 'swordfish' });
    const [sealed] = await before.encode([plain]);
    expect(encoding(sealed!)).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('swordfish');
    expect(defaultPayloadConverter.fromPayload((await before.decode([sealed!]))[0]!)).toEqual({ secret: 'swordfish' });

    const tampered = { ...sealed!, data: Buffer.from(sealed!.data!).map((b, i) => (i === 20 ? b ^ 1 : b)) };
    await expect(before.decode([tampered])).rejects.toThrow();
    await expect(new EncryptionCodec({ current: 'k2', keys: { k2 } }).decode([sealed!])).rejects.toThrow(
      "unknown key 'k1'",
    );

    const after = new EncryptionCodec({ current: 'k2', keys: { k1, k2 } });
    expect(defaultPayloadConverter.fromPayload((await after.decode([sealed!]))[0]!)).toEqual({ secret: 'swordfish' });
    expect(Buffer.from((await after.encode([plain]))[0]!.metadata!['encryption-key-id']!).toString()).toBe('k2');
    expect(() => new EncryptionCodec({ current: 'k3', keys: { k1 } })).toThrow('not among the keys');
  });
});

describe('a thread with encrypted payloads', () => {
  it('keeps Temporal history unreadable except through the authorized codec endpoint', async () => {
    const codec = new EncryptionCodec({ current: 'k1', keys: { k1 } });
    const model = new ScriptedModel((req) => {
      const last = req.messages[req.messages.length - 1]!;
      return last.role === 'user'
        ? { toolCall: { name: 'get_build_status', args: { build_id: '42' } } }
        : { text: 'Build 42 is green, swordfish.' };
    });
    const sys = await startTestSystem({ model, tools: [greenBuildTool()], payloadCodec: codec });
    const server = await startCodecServer({ codec, token: 'ui-secret', origins: loopbackOrigins });
    try {
      const thread = await sys.client.startThread({ threadId: uid('sealed') });
      await thread.sendUserText('the password is swordfish; is build 42 green?');
      await thread.waitForIdle({ settled: true });
      expect(render(await thread.history()).at(-1)).toBe('assistant: Build 42 is green, swordfish.');

      // A client without the codec sees ciphertext only.
      const raw = await sys.temporal.workflow.getHandle(thread.threadId).fetchHistory();
      const payloads: Payload[] = [];
      for (const e of raw.events ?? []) {
        payloads.push(...((e.workflowExecutionSignaledEventAttributes?.input?.payloads ?? []) as Payload[]));
        payloads.push(...((e.activityTaskScheduledEventAttributes?.input?.payloads ?? []) as Payload[]));
        payloads.push(...((e.activityTaskCompletedEventAttributes?.result?.payloads ?? []) as Payload[]));
        // A local activity's result (release 0.3 slices); the marker's `data` is the SDK's own bookkeeping (ids, attempt).
        payloads.push(...((e.markerRecordedEventAttributes?.details?.result?.payloads ?? []) as Payload[]));
      }
      // Two signals and two slices' results at least (a local slice's input is not recorded at all).
      expect(payloads.length).toBeGreaterThanOrEqual(4);
      expect(payloads.every((p) => encoding(p) === ENCRYPTED_ENCODING)).toBe(true);
      expect(
        payloads.some((p) =>
          Buffer.from(p.data ?? [])
            .toString('latin1')
            .includes('swordfish'),
        ),
      ).toBe(false);

      // The codec endpoint, as the UI calls it.
      const body = JSON.stringify({
        payloads: payloads.map((p) => ({
          metadata: Object.fromEntries(
            Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
          ),
          data: Buffer.from(p.data ?? []).toString('base64'),
        })),
      });
      const post = (headers: Record<string, string>) =>
        fetch(`${server.url}/decode`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', ...headers },
        });
      expect((await post({})).status).toBe(401);
      expect((await post({ authorization: 'Bearer wrong' })).status).toBe(401);
      const ok = await post({ authorization: 'Bearer ui-secret', origin: 'http://127.0.0.1:8233' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
      const decoded = (await ok.json()) as { payloads: { data: string }[] };
      const texts = decoded.payloads.map((p) => Buffer.from(p.data, 'base64').toString());
      expect(texts.some((t) => t.includes('the password is swordfish'))).toBe(true);

      const preflight = await fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:8233', 'access-control-request-method': 'POST' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
      const foreign = await fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example' },
      });
      expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await server.close();
      await sys.shutdown();
    }
  });
});
