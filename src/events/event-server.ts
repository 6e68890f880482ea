/**
 * Live events over HTTP (server-sent events), for clients outside the worker's process. Tokens never pass through
 * Temporal: the slice's stream feeds the worker's {@link EventLog}, and this server relays it.
 *
 * `GET /threads/:threadId/events` streams `id: <epoch>.<seq>` / `data: <ThreadEvent JSON>` frames. A reconnecting
 * client sends `Last-Event-ID` (standard EventSource behaviour) or `?after=`, and gets exactly the events it missed,
 * then live ones. An `event: gap` frame says that some were no longer buffered: reload committed history.
 *
 * Events carry the conversation, so every stream needs the endpoint's token (every thread) or the thread's capability
 * ({@link eventsCapability}: that thread only); without a configured token the server makes one up
 * ({@link EventServer.token}). The shared listener guard checks `Host` (DNS rebinding) and caps connections.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import {
  guardListener,
  isLoopbackHost,
  type ListenerLimits,
  listenerServerOptions,
  weakTokenError,
} from '../http/listener';
import { bearerOf, eventsAuthorizer, generateEventsToken } from './events-auth';
import { type EventLog, isEventCursor, type LoggedEvent } from './event-log';

/**
 * The longest thread id served, in UTF-8 bytes: Temporal's default limit of a workflow id (the server's
 * `limit.maxIDLength`), which a thread id is.
 */
export const MAX_THREAD_ID_BYTES = 1000;

export interface EventServerOptions extends ListenerLimits {
  /**
   * The interface to listen on. Events carry the conversation, so listening beyond loopback is a deliberate choice,
   * and needs an explicit `token`.
   * @default '127.0.0.1'
   */
  host?: string;
  /** @default 0 (any free port) */
  port?: number;
  /**
   * The bearer token that reads every thread (and under which thread capabilities are minted). Clients send it as
   * `Authorization: Bearer <token>`. Required when `host` is not loopback.
   * @default a random token, made at start ({@link EventServer.token})
   */
  token?: string;
  /**
   * Host names (a `Host` header without its port) accepted besides loopback names, e.g. the name a reverse proxy
   * forwards; see `guardListener`.
   * @default none (on a loopback bind, loopback names only)
   */
  allowedHosts?: readonly string[];
  /**
   * Browser origins allowed to read streams across origins (a page holding a thread capability); no credentials.
   * @default none
   */
  origins?: readonly string[];
  /**
   * Comment frames keep idle connections open through proxies.
   * @default 15_000
   */
  keepAliveMs?: number;
}

/** Options of {@link buildEventApp}: those of the server, with its token settled. */
export type EventAppOptions = Omit<EventServerOptions, 'token'> & { token: string };

export interface EventServer {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  /** The token that reads every thread: the one configured, or the one made at start. */
  readonly token: string;
  close(): Promise<void>;
}

const frame = (e: LoggedEvent) => `id: ${e.id}\ndata: ${JSON.stringify(e.event)}\n\n`;

/**
 * Where a subscriber resumes: `Last-Event-ID` (an EventSource reconnecting), else `?after=`; undefined for the start.
 * Anything not shaped like an event id is refused rather than read as "unknown", which would replay.
 */
function positionOf(lastEventId: unknown, after: unknown): string | undefined | 'invalid' {
  const given = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : after;
  if (given === undefined || given === '') return undefined;
  return typeof given === 'string' && isEventCursor(given) ? given : 'invalid';
}

export function buildEventApp(log: EventLog, options: EventAppOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    ...listenerServerOptions(options),
    // A thread id may take up to MAX_THREAD_ID_BYTES bytes, each up to 3 characters percent-encoded in the path.
    routerOptions: { maxParamLength: 3 * MAX_THREAD_ID_BYTES },
  });
  guardListener(app, {
    bindHost: options.host ?? '127.0.0.1',
    ...(options.allowedHosts && { allowedHosts: options.allowedHosts }),
    ...(options.maxConnections !== undefined && { maxConnections: options.maxConnections }),
  });
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const authorized = eventsAuthorizer(options.token);
  const origins = new Set(options.origins ?? []);
  // A page of a listed origin may read the answer (a stream, or why it was refused); without credentials.
  const corsOf = (origin: string | undefined): Record<string, string> =>
    origin !== undefined && origins.has(origin) ? { 'access-control-allow-origin': origin, vary: 'origin' } : {};

  // Open: it says only that the worker runs, and its epoch (which is in every event id anyway).
  app.get('/health', async () => ({ ok: true, epoch: log.epoch }));

  app.get<{ Params: { threadId: string }; Querystring: { after?: unknown; access_token?: unknown } }>(
    '/threads/:threadId/events',
    (req, reply) => {
      const { threadId } = req.params;
      const cors = corsOf(req.headers.origin);
      reply.headers(cors);
      // A parameter given twice arrives as an array: taken as absent (credentials) or refused (a position).
      const accessToken = typeof req.query.access_token === 'string' ? req.query.access_token : undefined;
      const afterQuery = req.query.after;
      // Refused before anything is streamed: a request without the right credentials holds no connection open.
      const bearer = bearerOf(req.headers.authorization);
      if (!authorized({ ...(bearer && { bearer }), ...(accessToken && { accessToken }) }, threadId)) {
        return reply.code(401).send({ error: 'missing or wrong events token (or capability for this thread)' });
      }
      if (Buffer.byteLength(threadId) > MAX_THREAD_ID_BYTES) {
        return reply.code(414).send({
          error: `thread id of ${Buffer.byteLength(threadId)} bytes: ids take up to ${MAX_THREAD_ID_BYTES} bytes`,
        });
      }
      const after = positionOf(req.headers['last-event-id'], afterQuery);
      if (after === 'invalid') {
        return reply.code(400).send({ error: 'after / Last-Event-ID must be an event id (<epoch>.<seq>[~...])' });
      }
      reply.hijack();
      const res = reply.raw;
      // Subscribed before the answer's head leaves: a client that sees the stream open (EventSource `open`) may read
      // committed history at once and count on every later event reaching it (a follow's seam, client/follow.ts).
      const { replay, unsubscribe } = log.subscribe(threadId, after, (e) => res.write(frame(e)));
      res.writeHead(200, {
        ...cors,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      // Reconnect quickly: the replay makes a reconnect lossless, so there is no reason to wait long.
      res.write('retry: 250\n\n');
      if (replay.gap) res.write('event: gap\ndata: {}\n\n');
      for (const e of replay.events) res.write(frame(e));
      const ping = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
      req.raw.on('close', () => {
        clearInterval(ping);
        unsubscribe();
      });
      return reply;
    },
  );
  return app;
}

/**
 * Starts the events endpoint of a worker. Throws when asked to listen beyond loopback without a token: a token made
 * up here would be known to no client on another machine, and no token is no protection.
 */
export async function startEventServer(log: EventLog, options: EventServerOptions = {}): Promise<EventServer> {
  const host = options.host ?? '127.0.0.1';
  if (options.token === undefined && !isLoopbackHost(host)) {
    throw new Error(
      `the live events endpoint on ${host} (beyond loopback) needs a token: set eventsEndpoint.token (the CLI: INFINITY_EVENTS_TOKEN), shared with its clients`,
    );
  }
  if (options.token === '') throw new Error('the live events token is empty');
  const weak = weakTokenError('the live events endpoint', host, options.token);
  if (weak) throw new Error(weak);
  const token = options.token ?? generateEventsToken();
  const app = buildEventApp(log, { ...options, token });
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('event server: no TCP address');
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    token,
    close: async () => {
      // Open event streams never end by themselves.
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
