/**
 * A remote codec endpoint for the Temporal UI and CLI (Temporal's codec server protocol: `POST /decode` and
 * `POST /encode` with `{"payloads": [...]}` in proto3 JSON; only the last path segment names the operation, so the
 * endpoint may sit under any prefix). Point the UI at it (`temporal server start-dev --ui-codec-endpoint`, or the UI's
 * codec setting) and encrypted payloads read as plain JSON, for those the `authorize` check lets through.
 *
 * It decrypts the conversation for whoever passes, so it never starts open: it needs a bearer `token` or an
 * `authorize` function. The Temporal UI can send no bearer token of its own (only its OIDC access token, or cookies),
 * so the token is also taken as the first path segment: give the UI {@link CodecServer.uiEndpoint}. A UI whose settings
 * other users can read (any local dev server's: `/api/v1/settings`) would publish it, so for the UI of a local dev
 * server there is `sameUserBrowser` instead: the endpoint checks who opened the connection (issue 38, finding 4).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { guardListener, type ListenerLimits, listenerServerOptions, weakTokenError } from '../http/listener';
import { canCheckPeerUser, isOwnUserPeer } from './peer-user';

/** Options of {@link startCodecServer}: the Temporal UI's codec endpoint. `codec`, and `token` or `authorize`. */
export interface CodecServerOptions extends ListenerLimits {
  /** The codec the workers and clients use (e.g. an `EncryptionCodec`). */
  codec: PayloadCodec;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port; see `url`) */
  port?: number;
  /**
   * Browser origins allowed to read its answers (the Temporal UI's, e.g. `http://localhost:8233`), or a test of the
   * origin. List the UI's exact origins: any other page an allowed origin serves can call it too.
   * @default none (no browser may call it)
   */
  origins?: readonly string[] | ((origin: string) => boolean);
  /**
   * Let allowed origins send cookies (`Access-Control-Allow-Credentials`), for an `authorize` that reads them (the
   * UI's "Include cross-origin credentials"). A bearer token or the token in the path needs no credentials.
   * @default false
   */
  credentials?: boolean;
  /**
   * Who may encode and decode, instead of the token (e.g. checking the UI's OIDC access token, which it sends with
   * "Pass access token").
   * @default the bearer `token`
   */
  authorize?: (request: FastifyRequest) => boolean | Promise<boolean>;
  /**
   * The token callers send, as `Authorization: Bearer <token>` or as the first path segment
   * (`<url>/<token>/decode`). Required unless `authorize` is given. A long random secret.
   * @default none
   */
  token?: string;
  /**
   * Also serve, without the token, a browser of this process's own OS user at one of `origins`: a request over
   * loopback whose `Origin` is allowed and whose TCP connection was opened by a process of this user (the kernel's
   * socket table, `/proc/net/tcp`). For the Temporal UI of a local dev server, which can send no credential of its own
   * and whose settings any local user can read: it is given `url`, with no token in it. A process of another user is
   * refused whatever `Origin` it sends; one of the same user is not (it could read the app's memory and its
   * conversation store as well). Linux only: elsewhere it refuses to start ({@link canCheckPeerUser}).
   * @default false
   */
  sameUserBrowser?: boolean;
  /**
   * Host names (a `Host` header without its port) accepted besides loopback names; see `guardListener`.
   * @default none (on a loopback bind, loopback names only)
   */
  allowedHosts?: readonly string[];
  /**
   * Largest request body: the bound on the bytes one request makes it decode or encode.
   * @default 4194304 (4 MiB)
   */
  bodyLimit?: number;
  /**
   * Most payloads in one request: many tiny ones cost far more than their bytes (200,000 in a body under the byte
   * limit held the process for seconds). The UI and the CLI send the payloads of one event field at a time.
   * @default 1000
   */
  maxPayloads?: number;
}

/** A running codec endpoint ({@link startCodecServer}). */
export interface CodecServer {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  url: string;
  /**
   * The endpoint to give the Temporal UI (its codec setting, or the dev server's `--ui-codec-endpoint`): `url` with the
   * token as its first path segment, since the UI sends no bearer token. Present with `token` and no `authorize`.
   * Whoever can read the UI's settings can read it (any local user, for a dev server's UI: its `/api/v1/settings`):
   * for a local UI prefer `sameUserBrowser` and give it `url`; on a shared UI, use `authorize` with the UI's access
   * token instead.
   */
  uiEndpoint?: string;
  close(): Promise<void>;
}

/** The defaults of {@link CodecServerOptions}' bounds. */
export const DEFAULT_CODEC_LIMITS = Object.freeze({ bodyLimit: 4 * 1024 * 1024, maxPayloads: 1_000 });

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** Is `p` a payload in proto3 JSON: an object with an optional base64 `data` and optional base64 metadata values? */
function isJsonPayload(p: unknown): p is JsonPayload {
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return false;
  const { metadata, data } = p as { metadata?: unknown; data?: unknown };
  if (data !== undefined && typeof data !== 'string') return false;
  if (metadata === undefined) return true;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return false;
  return Object.values(metadata).every((v) => typeof v === 'string');
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

/** Equal strings, compared in constant time whatever their lengths (through their digests). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The path's segments, decoded; undefined when one does not decode. */
function segmentsOf(url: string): string[] | undefined {
  const path = url.split('?')[0]!;
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** The token check: `Authorization: Bearer <token>`, or the token as the first path segment. */
function tokenCheck(token: string) {
  return (req: FastifyRequest) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (bearer !== undefined && sameSecret(bearer, token)) return true;
    const segments = segmentsOf(req.url) ?? [];
    return segments.length >= 2 && sameSecret(segments[0]!, token);
  };
}

/** Is this a loopback peer address (`127.x.x.x`, `::1`, `::ffff:127.x.x.x`)? */
const isLoopbackAddress = (address: string | undefined) =>
  address !== undefined && (/^(::ffff:)?127\./i.test(address) || address === '::1');

/** A fresh random codec token: 32 bytes, base64url (safe as a path segment). */
export const generateCodecToken = (): string => randomBytes(32).toString('base64url');

/** Any page served from this machine (a local dev server's UI on whatever port it got). Broad: prefer exact origins. */
export const loopbackOrigins = (origin: string) => /^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(origin);

/** The origins of a Temporal UI at `uiUrl` (`http://127.0.0.1:8233`): under its loopback names too, as typed. */
export function uiOrigins(uiUrl: string): string[] {
  const u = new URL(uiUrl);
  const port = u.port ? `:${u.port}` : '';
  const names = ['127.0.0.1', 'localhost'].includes(u.hostname) ? ['127.0.0.1', 'localhost'] : [u.hostname];
  return names.map((h) => `${u.protocol}//${h}${port}`);
}

/**
 * Serves `codec` as a remote codec endpoint for the Temporal UI and CLI, so they show encrypted payloads decoded to
 * the callers `token` or `authorize` lets through (it refuses to start with neither).
 *
 * @example
 * ```ts
 * import { generateCodecToken, startCodecServer, uiOrigins } from 'infinity-temporal';
 *
 * const server = await startCodecServer({
 *   codec, // the workers' EncryptionCodec
 *   token: generateCodecToken(), // or process.env.CODEC_TOKEN
 *   origins: uiOrigins('http://localhost:8233'), // the Temporal UI's origin may call it from the browser
 *   sameUserBrowser: true, // Linux: this user's browser needs no token, so the UI can be given `url`
 * });
 * // startDevServer({ uiCodecEndpoint: server.url }); or paste server.uiEndpoint into the UI's own codec setting
 * // (kept in that browser). A URL with the token on a command line or in the UI's settings is any local user's to read.
 * console.log(server.url);
 * ```
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  if (options.token === undefined && options.authorize === undefined) {
    throw new TypeError(
      'startCodecServer needs a `token` (a long random secret its callers send) or an `authorize` function: it decrypts payloads for whoever it lets through',
    );
  }
  if (options.token === '') throw new TypeError('the codec token is empty');
  const host = options.host ?? '127.0.0.1';
  const weak = weakTokenError('the codec endpoint', host, options.token);
  if (weak) throw new TypeError(weak);
  if (options.sameUserBrowser && !canCheckPeerUser())
    throw new TypeError(
      `sameUserBrowser needs the kernel's socket table (/proc/net/tcp, Linux), which ${process.platform} does not have here: use the token (uiEndpoint) or authorize`,
    );
  const maxPayloads = options.maxPayloads ?? DEFAULT_CODEC_LIMITS.maxPayloads;
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit ?? DEFAULT_CODEC_LIMITS.bodyLimit,
    ...listenerServerOptions(options),
  });
  guardListener(app, {
    bindHost: host,
    ...(options.allowedHosts && { allowedHosts: options.allowedHosts }),
    ...(options.maxConnections !== undefined && { maxConnections: options.maxConnections }),
  });
  const byCredential = options.authorize ?? tokenCheck(options.token!);
  const list = options.origins ?? [];
  const allowed = typeof list === 'function' ? list : (origin: string) => list.includes(origin);
  /** A browser of our own user at an allowed origin (`sameUserBrowser`): a check of who opened the connection. */
  const ownBrowser = async (req: FastifyRequest) => {
    const origin = req.headers.origin;
    return (
      origin !== undefined &&
      allowed(origin) &&
      isLoopbackAddress(req.socket.remoteAddress) &&
      isOwnUserPeer(req.socket)
    );
  };
  const authorize = options.sameUserBrowser
    ? async (req: FastifyRequest) => (await byCredential(req)) || (await ownBrowser(req))
    : byCredential;

  app.addHook('onRequest', async (req, reply) => {
    const origin = req.headers.origin;
    if (origin && allowed(origin)) {
      reply.header('access-control-allow-origin', origin);
      if (options.credentials) reply.header('access-control-allow-credentials', 'true');
      reply.header('access-control-allow-methods', 'POST, OPTIONS');
      reply.header('access-control-allow-headers', 'authorization, content-type, x-namespace');
      reply.header('vary', 'origin');
    }
    // A preflight carries no credentials: answered for everyone (the headers above decide what the browser allows).
    if (req.method === 'OPTIONS') return reply.code(204).send();
    if (!(await authorize(req))) return reply.code(401).send({ error: 'not authorized to use this codec' });
    return undefined;
  });

  const handle = async (req: FastifyRequest<{ Body: { payloads?: unknown } }>, reply: FastifyReply) => {
    const op = segmentsOf(req.url)?.at(-1);
    if (op !== 'encode' && op !== 'decode') return reply.code(404).send({ error: 'POST .../encode or .../decode' });
    const payloads = req.body?.payloads;
    if (!Array.isArray(payloads)) return reply.code(400).send({ error: 'expected {"payloads": [...]}' });
    if (payloads.length > maxPayloads) {
      return reply.code(413).send({ error: `at most ${maxPayloads} payloads per request, got ${payloads.length}` });
    }
    if (!payloads.every(isJsonPayload)) {
      return reply.code(400).send({ error: 'each payload is {"metadata"?: {name: base64}, "data"?: base64}' });
    }
    try {
      const input = payloads.map(fromJson);
      const output = op === 'encode' ? await options.codec.encode(input) : await options.codec.decode(input);
      return { payloads: output.map(toJson) };
    } catch (e) {
      return reply.code(400).send({ error: e instanceof Error ? e.message : String(e) });
    }
  };
  // Under any prefix (the token, a namespace): only the last segment names the operation (the protocol's rule).
  app.post('/*', handle);

  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('codec server: no TCP address');
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : host}:${address.port}`;
  return {
    url,
    ...(options.token !== undefined &&
      options.authorize === undefined && { uiEndpoint: `${url}/${encodeURIComponent(options.token)}` }),
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
