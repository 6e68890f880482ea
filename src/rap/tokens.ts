/**
 * Callback tokens: every invocation's `callback_url` ends in a token bound to one (thread, tool call), signed with
 * HMAC-SHA256. Only the tool that received the invocation knows it; a token for one call cannot deliver to another,
 * and a changed byte breaks the signature. Tokens carry no expiry unless one is asked for: a subscription's URL must
 * live as long as the subscription, and what ends a URL is its thread (the gateway asks it; 410 Gone), not a clock.
 * Keys carry ids so they rotate without breaking calls in flight: new tokens use the current key, and every listed
 * key still verifies.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { validTraceparent } from './trace-context';

export interface CallbackKeys {
  current: string;
  /** Key id → secret (at least 32 bytes). */
  keys: Record<string, Buffer>;
}

export interface TokenClaims {
  /** Thread (RAP `group_id`). */
  threadId: string;
  /** Tool call (RAP `id`; for subscription events, `tool_call_id`). */
  callId: string;
  /** Expiry, epoch ms; absent: the token never expires (the default: its thread revokes it). */
  expiresAt?: number;
  /**
   * The W3C `traceparent` of the slice that dispatched the call, when it was traced: the gateway delivers the callback
   * as part of that trace (decision 61). Signed like the rest, so a tool cannot move its results into another trace.
   */
  traceparent?: string;
}

export type TokenCheck =
  { ok: true; claims: TokenClaims } | { ok: false; reason: 'malformed' | 'bad_signature' | 'unknown_key' | 'expired' };

const b64 = (b: Buffer) => b.toString('base64url');
const sign = (secret: Buffer, keyId: string, body: string): Buffer =>
  createHmac('sha256', secret).update(`${keyId}.${body}`).digest();

export class CallbackTokens {
  /**
   * Key id → secret. A Map, not the caller's object: a key id comes from the URL, and on a plain object `constructor`,
   * `__proto__` or `toString` would find `Object.prototype`'s members instead of no key.
   */
  private readonly secrets: ReadonlyMap<string, Buffer>;
  private readonly current: string;

  constructor(keys: CallbackKeys) {
    const secrets = new Map<string, Buffer>();
    for (const [id, k] of Object.entries(keys.keys)) {
      if (k.length < 32) throw new TypeError(`callback key '${id}' must have at least 32 bytes`);
      if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new TypeError(`callback key id '${id}' must be [A-Za-z0-9_-]`);
      secrets.set(id, k);
    }
    if (!secrets.has(keys.current))
      throw new TypeError(`the current callback key '${keys.current}' is not among the keys`);
    this.secrets = secrets;
    this.current = keys.current;
  }

  /** `<keyId>.<claims>.<signature>`, URL-safe. A random nonce makes two tokens for the same call differ. */
  mint(claims: TokenClaims): string {
    const keyId = this.current;
    const e = claims.expiresAt === undefined ? {} : { e: claims.expiresAt };
    const p = claims.traceparent === undefined ? {} : { p: claims.traceparent };
    const body = b64(
      Buffer.from(JSON.stringify({ t: claims.threadId, c: claims.callId, ...e, ...p, n: b64(randomBytes(9)) })),
    );
    return `${keyId}.${body}.${b64(sign(this.secrets.get(keyId)!, keyId, body))}`;
  }

  verify(token: string, now = Date.now()): TokenCheck {
    const parts = token.split('.');
    if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return { ok: false, reason: 'malformed' };
    const [keyId, body, signature] = parts as [string, string, string];
    const secret = this.secrets.get(keyId);
    if (secret === undefined) return { ok: false, reason: 'unknown_key' };
    // Compare the text, not the decoded bytes: base64url's last character carries unused bits, so several spellings
    // decode to the same signature, and a second spelling of a spent token must not pass as a new one.
    const expected = Buffer.from(b64(sign(secret, keyId, body)));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { ok: false, reason: 'bad_signature' };
    let raw: unknown;
    try {
      raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    const c = raw as { t?: unknown; c?: unknown; e?: unknown; p?: unknown };
    if (typeof c.t !== 'string' || typeof c.c !== 'string' || (c.e !== undefined && typeof c.e !== 'number'))
      return { ok: false, reason: 'malformed' };
    // The trace context is a hint: one that does not parse is ignored, the token still delivers.
    const traceparent = validTraceparent(c.p);
    const trace = traceparent === undefined ? {} : { traceparent };
    // No expiry: its thread revokes it. Tokens minted with one (all those from before expiry became optional) keep it.
    if (c.e === undefined) return { ok: true, claims: { threadId: c.t, callId: c.c, ...trace } };
    if (c.e <= now) return { ok: false, reason: 'expired' };
    return { ok: true, claims: { threadId: c.t, callId: c.c, expiresAt: c.e, ...trace } };
  }
}

/** A fresh random key, for tests and first setups (store it; tokens die with it). */
export const newCallbackKey = () => randomBytes(32);
