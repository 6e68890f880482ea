/**
 * Counting the RAP gateway's refusals (`infinity_callbacks_rejected`, label `status`). A refusal can be sent from
 * many places — the listener's Host check, the token hook that runs before a body is read, the route, the framework's
 * body parsing and its error handler, the router (a bad or overlong URL) and Node's HTTP parser (malformed requests,
 * request timeouts) — and counting where each is sent missed most of them. So they are counted where they leave: one
 * `onResponse` hook for every answer on a callback path with a status of 400 or more, plus the two places Fastify
 * answers without running hooks. Each refusal is counted exactly once.
 */
import type { Socket } from 'node:net';
import type { MetricMeter } from '@temporalio/common';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { METRICS } from '../core/metric-names';

/** The callback route's path, before its token. */
export const CALLBACK_PATH = '/rap/callback';

const onCallbackPath = (url: string) => url === CALLBACK_PATH || url.startsWith(`${CALLBACK_PATH}/`);

export interface RefusalCounter {
  /** For the Fastify constructor: the router's refusals and the HTTP parser's, which no hook sees. */
  readonly serverOptions: {
    frameworkErrors: (error: FastifyError, req: FastifyRequest, reply: FastifyReply) => void;
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => void;
  };
  /** Counts every answer of 400 or more on a callback path; register it on the app before it is ready. */
  install(app: FastifyInstance): void;
}

/** Without a meter, refusals are still answered as Fastify would, and counted nowhere. */
export function refusalCounter(meter: MetricMeter | undefined): RefusalCounter {
  const counter = meter?.createCounter(METRICS.callbacksRejected.name, undefined, METRICS.callbacksRejected.help);
  const count = (status: number) => counter?.add(1, { status: String(status) });
  return {
    serverOptions: {
      // A URL the router cannot take (bad percent-encoding: 400; a token past the longest parameter: 414). Fastify
      // builds a reply that runs no hook, so it is counted here, and answered with Fastify's status.
      frameworkErrors: (error, req, reply) => {
        const status = error.statusCode ?? 400;
        if (onCallbackPath(req.url)) count(status);
        void reply.code(status).send({ error: error.message });
      },
      // What Node's HTTP parser refuses before there is a request: malformed HTTP (400), headers too large (431), a
      // request that did not arrive within the request timeout (408). Fastify's own handler answers the same way.
      clientErrorHandler: (error, socket) => {
        if (error.code === 'ECONNRESET' || socket.destroyed) return; // nothing to answer
        const status =
          error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
        const body = JSON.stringify({ error: CLIENT_ERRORS[status] });
        if (socket.writable) {
          count(status);
          socket.write(
            `HTTP/1.1 ${status} ${CLIENT_ERRORS[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
              `Content-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
          );
        }
        socket.destroy(error);
      },
    },
    install(app) {
      app.addHook('onResponse', async (req, reply) => {
        if (reply.statusCode >= 400 && onCallbackPath(req.url)) count(reply.statusCode);
      });
    },
  };
}

const CLIENT_ERRORS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};
