/**
 * A remote codec endpoint for the Temporal UI and CLI (Temporal's codec server protocol: `POST /decode` and
 * `POST /encode` with `{"payloads": [...]}` in proto3 JSON). Point the UI at it (`temporal server start-dev
 * --ui-codec-endpoint`, or the UI's codec setting) and encrypted payloads read as plain JSON, for those the
 * `authorize` check lets through.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyRequest } from 'fastify';

/** Options of {@link startCodecServer}: the Temporal UI's codec endpoint. Only `codec` is required. */
export interface CodecServerOptions {
  /** The codec the workers and clients use (e.g. an `EncryptionCodec`). */
  codec: PayloadCodec;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port; see `url`) */
  port?: number;
  /**
   * Browser origins allowed to call (the Temporal UI's, e.g. `http://localhost:8233`), or a test of the origin.
   * @default none (no browser may call it)
   */
  origins?: string[] | ((origin: string) => boolean);
  /** Who may decode. @default a bearer `token` when given, else everyone who can reach the endpoint */
  authorize?: (request: FastifyRequest) => boolean | Promise<boolean>;
  /** The bearer token callers must send. @default none */
  token?: string;
  /** Largest request body. @default 4194304 (4 MiB) */
  bodyLimit?: number;
}

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
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

function bearer(token: string) {
  const expected = Buffer.from(`Bearer ${token}`);
  return (req: FastifyRequest) => {
    const given = Buffer.from(req.headers.authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

/** Any page served from this machine (a local dev server's UI on whatever port it got). */
export const loopbackOrigins = (origin: string) => /^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(origin);

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit ?? 4 * 1024 * 1024 });
  const authorize = options.authorize ?? (options.token !== undefined ? bearer(options.token) : () => true);
  const list = options.origins ?? [];
  const allowed = typeof list === 'function' ? list : (origin: string) => list.includes(origin);

  app.addHook('onRequest', async (req, reply) => {
    const origin = req.headers.origin;
    if (origin && allowed(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-credentials', 'true');
      reply.header('access-control-allow-methods', 'POST, OPTIONS');
      reply.header('access-control-allow-headers', 'authorization, content-type, x-namespace');
      reply.header('vary', 'origin');
    }
    if (req.method === 'OPTIONS') return reply.code(204).send();
    if (!(await authorize(req))) return reply.code(401).send({ error: 'not authorized to use this codec' });
    return undefined;
  });

  const route = (path: '/encode' | '/decode') =>
    app.post<{ Body: { payloads?: JsonPayload[] } }>(path, async (req, reply) => {
      const payloads = req.body?.payloads;
      if (!Array.isArray(payloads)) return reply.code(400).send({ error: 'expected {"payloads": [...]}' });
      try {
        const input = payloads.map(fromJson);
        const output = path === '/encode' ? await options.codec.encode(input) : await options.codec.decode(input);
        return { payloads: output.map(toJson) };
      } catch (e) {
        return reply.code(400).send({ error: e instanceof Error ? e.message : String(e) });
      }
    });
  route('/encode');
  route('/decode');

  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('codec server: no TCP address');
  return { url: `http://${options.host ?? '127.0.0.1'}:${address.port}`, close: () => app.close() };
}
