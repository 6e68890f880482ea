/**
 * Who may read a worker's live events: the holder of the endpoint's token reads every thread; the holder of a
 * thread's capability (an HMAC of the thread id under that token) reads that one thread. An application mints a
 * capability for a browser that shows one conversation, so the browser never holds the token itself; rotating the
 * token revokes every capability minted under it.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Separates capabilities from any other HMAC a deployment might compute under the same secret. */
const CAPABILITY_CONTEXT = 'infinity-temporal/events-capability/v1\n';
/** Capabilities start with it, so a log line or an error can tell one from a token. */
const CAPABILITY_PREFIX = 'cap1.';

/** A fresh random token for an events endpoint: 32 bytes, base64url. */
export function generateEventsToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The capability to read the live events of `threadId` alone, under the endpoint's `token`: send it as `Authorization:
 * Bearer <capability>` (the `eventsToken` of an `AgentClient` that reads only that thread), or, from a browser's
 * `EventSource`, which cannot set headers, as `?access_token=<capability>`. It does not expire: rotate the token to
 * revoke it.
 */
export function eventsCapability(token: string, threadId: string): string {
  const mac = createHmac('sha256', token).update(CAPABILITY_CONTEXT).update(threadId, 'utf8').digest('base64url');
  return `${CAPABILITY_PREFIX}${mac}`;
}

/** Equal strings, compared in constant time whatever their lengths (through their digests). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** What a request presents: the bearer value of its `Authorization` header, and its `access_token` query parameter. */
export interface EventsCredentials {
  bearer?: string;
  accessToken?: string;
}

/** The bearer value of an `Authorization` header (`Bearer <value>`), if it has one. */
export function bearerOf(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * The check of an endpoint with this token: may these credentials read `threadId`? The token itself is taken only
 * from the header (a URL ends up in logs and browser history); a capability from either.
 */
export function eventsAuthorizer(token: string): (credentials: EventsCredentials, threadId: string) => boolean {
  return ({ bearer, accessToken }, threadId) => {
    const capability = eventsCapability(token, threadId);
    if (bearer !== undefined && (sameSecret(bearer, token) || sameSecret(bearer, capability))) return true;
    return accessToken !== undefined && sameSecret(accessToken, capability);
  };
}
