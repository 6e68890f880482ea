/**
 * Payload encryption for Temporal (AES-256-GCM): what a thread's inputs and slice payloads carry (user text, tool
 * results) is unreadable in Temporal's database and UI, except through an authorized codec endpoint
 * ({@link startCodecServer}). Keys rotate: new payloads use the current key; any listed key still decrypts.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** The `encoding` metadata of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';

/** The keys of an {@link EncryptionCodec}. */
export interface EncryptionKeys {
  /** Id of the key new payloads are encrypted with. */
  current: string;
  /** Every key that may still be needed to decrypt, by id: 32 bytes each. */
  keys: Record<string, Buffer>;
}

/**
 * A Temporal payload codec that encrypts every payload with AES-256-GCM under the `current` key, and decrypts with
 * whichever listed key a payload names (payloads it did not encrypt pass through). Give the same codec to the worker
 * (`payloadCodec`) and to every client's data converter; {@link startCodecServer} lets the Temporal UI read them.
 *
 * @example
 * ```ts
 * import { randomBytes } from 'node:crypto';
 * import { Client } from '@temporalio/client';
 * import { createAgentWorker, EncryptionCodec } from 'infinity-temporal';
 *
 * // keys from your secret store; to rotate, add k3, make it `current`, and drop k1 once nothing needs it
 * const codec = new EncryptionCodec({ current: 'k2', keys: { k1: oldKey, k2: randomBytes(32) } });
 * const worker = await createAgentWorker({ connection, taskQueue, store, model, payloadCodec: codec });
 * const temporal = new Client({ connection: clientConnection, dataConverter: { payloadCodecs: [codec] } });
 * ```
 */
export class EncryptionCodec implements PayloadCodec {
  /**
   * The keys by id, in a Map: a key id comes from a payload's metadata, which anyone who can write to Temporal
   * controls, and on a plain object `constructor` or `__proto__` would find Object.prototype's members.
   */
  private readonly byId: ReadonlyMap<string, Buffer>;
  private readonly current: string;

  /** Throws a `TypeError` for a key that is not 32 bytes, or a `current` that is not among `keys`. */
  constructor(keys: EncryptionKeys) {
    this.byId = new Map(Object.entries(keys.keys));
    for (const [id, key] of this.byId) {
      if (!Buffer.isBuffer(key) || key.length !== 32)
        throw new TypeError(
          `encryption key '${id}' must be 32 bytes, got ${Buffer.isBuffer(key) ? key.length : typeof key}`,
        );
    }
    if (!this.byId.has(keys.current)) throw new TypeError(`the current key '${keys.current}' is not among the keys`);
    this.current = keys.current;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.byId.get(this.current)!;
    return payloads.map((p) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const plain = temporal.api.common.v1.Payload.encode(p).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID]: Buffer.from(this.current) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (Buffer.from(p.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING) return p;
      const keyId = Buffer.from(p.metadata?.[KEY_ID] ?? []).toString();
      const key = this.byId.get(keyId);
      if (!key) throw new Error(`payload encrypted with unknown key '${keyId}'`);
      const data = Buffer.from(p.data ?? []);
      if (data.length < 28) throw new Error('encrypted payload too short');
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(data.length - 16));
      const plain = Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}
