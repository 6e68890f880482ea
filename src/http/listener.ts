/**
 * What every HTTP listener of the runtime (the RAP gateway and tool server, the live-events endpoint, the codec
 * endpoint) does before its routes see a request: a bounded time for a request to arrive, a cap on open connections,
 * and a `Host` check, so a page on another origin cannot reach a loopback listener through DNS rebinding.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Bounds on what a client may hold open on a listener. */
export interface ListenerLimits {
  /**
   * Time for a whole request (headers and body) to arrive; a slower client is disconnected. Long responses (a live
   * event stream) are not bounded by it.
   * @default 30_000
   */
  requestTimeoutMs?: number;
  /**
   * Time an idle keep-alive connection stays open between requests.
   * @default 5_000
   */
  keepAliveTimeoutMs?: number;
  /**
   * Most connections open at once; further ones are closed as they arrive.
   * @default 1_024
   */
  maxConnections?: number;
}

/** The defaults of {@link ListenerLimits}. */
export const DEFAULT_LISTENER_LIMITS: Readonly<Required<ListenerLimits>> = Object.freeze({
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_024,
});

/**
 * The Fastify constructor options that carry {@link ListenerLimits}. Node requires the headers timeout to be at most the
 * request timeout, so it is set to the same bound.
 */
export function listenerServerOptions(limits: ListenerLimits = {}): {
  requestTimeout: number;
  keepAliveTimeout: number;
  http: { headersTimeout: number };
} {
  const l = { ...DEFAULT_LISTENER_LIMITS, ...limits };
  return {
    requestTimeout: l.requestTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    http: { headersTimeout: l.requestTimeoutMs },
  };
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Is `host` (a bind address) on the loopback interface? */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * The fewest characters a bearer token may have on a listener beyond loopback: such a token stands alone against the
 * network (the callback keys' 32 bytes are the same bar). `openssl rand -hex 32` makes one of 64.
 */
export const MIN_NETWORK_TOKEN_LENGTH = 32;

/** Why `token` may not guard a listener of `what` bound to `host`, or undefined when it may. */
export function weakTokenError(what: string, host: string, token: string | undefined): string | undefined {
  if (token === undefined || isLoopbackHost(host) || token.length >= MIN_NETWORK_TOKEN_LENGTH) return undefined;
  return (
    `${what} on ${host} (beyond loopback) needs a token of at least ${MIN_NETWORK_TOKEN_LENGTH} characters, ` +
    `this one has ${token.length}: make one with \`openssl rand -hex 32\``
  );
}

/** The host name of a `Host` header, without its port (`[::1]:80` → `[::1]`, `Example.COM:80` → `example.com`). */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/**
 * Which `Host` headers a listener accepts. A listener bound to loopback accepts loopback names only (anything else is a
 * rebound DNS name), plus `allowedHosts`; a listener bound elsewhere accepts any host unless `allowedHosts` is given,
 * since the operator put it on the network under names this code cannot know.
 */
export function hostAccepts(
  bindHost: string,
  allowedHosts: readonly string[] | undefined,
): (header: string) => boolean {
  const extra = new Set((allowedHosts ?? []).map((h) => hostName(h)));
  const loopback = isLoopbackHost(bindHost);
  if (!loopback && allowedHosts === undefined) return () => true;
  return (header) => {
    const name = hostName(header);
    return extra.has(name) || (loopback && (LOOPBACK_NAMES.has(name) || /^127\.\d+\.\d+\.\d+$/.test(name)));
  };
}

/** Options of {@link guardListener}. */
export interface ListenerGuardOptions extends ListenerLimits {
  /** The address the listener binds. */
  bindHost: string;
  /**
   * Host names (a `Host` header without its port) accepted besides loopback names: the names a proxy or a peer uses.
   * On a listener bound beyond loopback, setting it turns the `Host` check on.
   */
  allowedHosts?: readonly string[];
  /** Called with the status of each request refused here (421 for a wrong `Host`), e.g. to count it. */
  onRefused?: (status: number, req: FastifyRequest) => void;
}

/**
 * Puts the `Host` check on `app` (first `onRequest` hook) and, once it listens, the connection cap. Register it before
 * any other hook.
 */
export function guardListener(app: FastifyInstance, options: ListenerGuardOptions): void {
  const accepts = hostAccepts(options.bindHost, options.allowedHosts);
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const host = req.headers.host;
    if (host === undefined || !accepts(host)) {
      options.onRefused?.(421, req);
      return reply.code(421).send({ error: 'this listener does not serve that Host' });
    }
    return undefined;
  });
  const max = options.maxConnections ?? DEFAULT_LISTENER_LIMITS.maxConnections;
  app.addHook('onListen', async () => {
    app.server.maxConnections = max;
  });
}
