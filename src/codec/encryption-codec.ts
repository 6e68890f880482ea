/**
 * Payload encryption for Temporal (AES-256-GCM): what a thread's inputs and slice payloads carry (user text, tool
 * results) is unreadable in Temporal's database and UI, except through an authorized codec endpoint
 * ({@link startCodecServer}). Keys rotate: new payloads use the current key; any listed key still decrypts.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';

export interface EncryptionKeys {
  /** Id of the key new payloads are encrypted with. */
  current: string;
  /** Every key that may still be needed to decrypt, by id: 32 bytes each. */
  keys: Record<string, Buffer>;
}

export class EncryptionCodec implements PayloadCodec {
  /**
   * The keys by id, in a Map: a key id comes from a payload's metadata, which anyone who can write to Temporal
   * controls, and on a plain object `constructor` or `__proto__` would find Object.prototype's members.
   */
  private readonly byId: ReadonlyMap<string, Buffer>;
  private readonly current: string;

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
