/**
 * Live events over HTTP (server-sent events), for clients outside the worker's process. Tokens never pass through
 * Temporal: the slice's stream feeds the worker's {@link EventLog}, and this server relays it.
 *
 * `GET /threads/:threadId/events` streams `id: <epoch>.<seq>` / `data: <ThreadEvent JSON>` frames. A reconnecting
 * client sends `Last-Event-ID` (standard EventSource behaviour) or `?after=`, and gets exactly the events it missed,
 * then live ones. An `event: gap` frame says that some were no longer buffered: reload committed history.
 */
import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { EventLog, LoggedEvent } from './event-log';

export interface EventServerOptions {
  /** Default 127.0.0.1: events carry the conversation, so listening beyond loopback is a deliberate choice. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** When set, requests must send `Authorization: Bearer <token>`. */
  token?: string;
  /** Comment frames keep idle connections open through proxies (default 15 s). */
  keepAliveMs?: number;
}

export interface EventServer {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  close(): Promise<void>;
}

function sameToken(given: string | undefined, expected: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(`Bearer ${expected}`);
  return a.length === b.length && timingSafeEqual(a, b);
}

const frame = (e: LoggedEvent) => `id: ${e.id}\ndata: ${JSON.stringify(e.event)}\n\n`;

export function buildEventApp(log: EventLog, options: EventServerOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false });
  const keepAliveMs = options.keepAliveMs ?? 15_000;

  app.addHook('onRequest', async (req, reply) => {
    if (options.token !== undefined && !sameToken(req.headers.authorization, options.token)) {
      await reply.code(401).send({ error: 'missing or wrong bearer token' });
    }
  });

  app.get('/health', async () => ({ ok: true, epoch: log.epoch }));

  app.get<{ Params: { threadId: string }; Querystring: { after?: string } }>(
    '/threads/:threadId/events',
    (req, reply) => {
      const lastId = req.headers['last-event-id'];
      const after = (typeof lastId === 'string' && lastId !== '' ? lastId : undefined) ?? req.query.after;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      // Reconnect quickly: the replay makes a reconnect lossless, so there is no reason to wait long.
      res.write('retry: 250\n\n');
      const { replay, unsubscribe } = log.subscribe(req.params.threadId, after, (e) => res.write(frame(e)));
      if (replay.gap) res.write('event: gap\ndata: {}\n\n');
      for (const e of replay.events) res.write(frame(e));
      const ping = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
      req.raw.on('close', () => {
        clearInterval(ping);
        unsubscribe();
      });
    },
  );
  return app;
}

/** Starts the events endpoint of a worker. */
export async function startEventServer(log: EventLog, options: EventServerOptions = {}): Promise<EventServer> {
  const app = buildEventApp(log, options);
  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('event server: no TCP address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: async () => {
      // Open event streams never end by themselves.
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
