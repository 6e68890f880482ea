/**
 * Who may use a RAP tool server, and where it may send its callbacks: the bearer token and `authorize` check on its RAP
 * routes, the allow-list of callback origins (checked before any callback, with its credentials, goes out), and the
 * base URL its manifest and choices name (from configuration, never from a request's `Host`).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost } from '../http/listener';

/** How a tool server decides who may call its RAP routes (see `RapToolServerOptions`). */
export interface ToolServerAccess {
  token?: string;
  authorize?(req: FastifyRequest): boolean | Promise<boolean>;
}

/** What a tool server is configured with: a token, `false` for none, or nothing said (see `RapToolServerOptions`). */
export interface ToolServerAccessOptions {
  token?: string | false;
  authorize?(req: FastifyRequest): boolean | Promise<boolean>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Compares secrets in constant time (their digests, so lengths do not show either). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** An unguessable secret for a capability URL (a choice's `response_url`). */
export const newCapabilityKey = (): string => randomBytes(32).toString('base64url');

/** Is this a wildcard bind (all interfaces), whose address names no reachable host? */
const isWildcardHost = (host: string) => host === '0.0.0.0' || host === '::' || host === '[::]';

/**
 * Refuses configurations that would put an open tool server on the network: a bind beyond loopback needs a token or an
 * `authorize` function given to it (a token made up at start would change with every restart, and the remote runtime
 * would have to learn it each time), and a wildcard bind needs `publicUrl` (its address is no URL a runtime can use).
 */
export function checkToolServerConfig(options: ToolServerAccessOptions & { host: string; publicUrl?: string }): void {
  if (typeof options.token === 'string' && options.token.length < 16)
    throw new TypeError('RAP tool server: the token must be at least 16 characters');
  if (!isLoopbackHost(options.host) && typeof options.token !== 'string' && options.authorize === undefined)
    throw new TypeError(
      `RAP tool server: binding ${options.host} (beyond loopback) needs a token or an authorize function; ` +
        'pass authorize: () => true only if something in front of it authenticates every request',
    );
  if (isWildcardHost(options.host) && options.publicUrl === undefined)
    throw new TypeError(`RAP tool server: binding ${options.host} needs publicUrl, the URL runtimes reach it at`);
}

/**
 * The token the server's RAP routes want (issue 38, finding 5): the one given; none with `token: false`, or with
 * `authorize` and no token (the check decides alone, as it did); otherwise a random one made here, so that a loopback
 * server is never open to every local process (which could invoke its tools and have their callbacks, with
 * `callbackHeaders`, posted to a loopback URL of its own). Call after {@link checkToolServerConfig}.
 */
export function toolServerToken(options: ToolServerAccessOptions): string | undefined {
  if (typeof options.token === 'string') return options.token;
  if (options.token === false || options.authorize !== undefined) return undefined;
  return newCapabilityKey();
}

/**
 * The `onRequest` hook of the RAP routes: a request carrying a browser's `Origin` is refused (no runtime sends one, and
 * a page must not drive a loopback server through a simple cross-origin POST), then the token (`Authorization:
 * Bearer`) and `authorize` must both pass, where configured.
 */
export function rapRouteGuard(access: ToolServerAccess) {
  const expected = access.token;
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.headers.origin !== undefined)
      return reply.code(403).send({ error: 'browser requests (with an Origin header) are not served here' });
    if (expected !== undefined) {
      const m = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m || !sameSecret(m[1]!, expected))
        return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'a valid bearer token is needed' });
    }
    if (access.authorize && !(await access.authorize(req))) return reply.code(403).send({ error: 'not authorized' });
    return undefined;
  };
}

/**
 * Whether a callback URL may receive this server's callbacks (and its `callbackHeaders`): an `http(s)` URL without
 * credentials whose origin is in `allowed`, or on loopback when `allowed` is not given. Returns why not, or undefined.
 */
export function callbackUrlRefusal(url: string, allowed: ReadonlySet<string> | undefined): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'callback_url is not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'callback_url must be http or https';
  if (u.username !== '' || u.password !== '') return 'callback_url must not carry credentials';
  const ok = allowed ? allowed.has(u.origin) : isLoopbackHost(u.hostname);
  return ok
    ? undefined
    : `callback_url origin ${u.origin} is not allowed by this tool server (its callbackOrigins option)`;
}

/** The origins of `callbackOrigins` entries (`https://gw.example.com/any/path` → `https://gw.example.com`). */
export function originSet(entries: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (entries === undefined) return undefined;
  return new Set(
    entries.map((e) => {
      const u = new URL(e);
      if (u.protocol !== 'http:' && u.protocol !== 'https:')
        throw new TypeError(`callbackOrigins: ${e} is not an http(s) origin`);
      return u.origin;
    }),
  );
}

/** `host` as it goes in a URL (IPv6 in brackets). */
export const urlHost = (host: string): string => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);
