/**
 * The RAP callback gateway: where tools POST results, events, OAuth requests, user choices and view updates. Each
 * callback URL carries a token bound to one (thread, tool call) ({@link CallbackTokens}); the gateway checks it, checks
 * the body against the protocol and against the token, and turns the callback into a message for the thread's input
 * queue. Anything forged, mismatched, replayed, malformed or oversized is refused before a thread is touched.
 *
 * Status codes: 200 accepted · 400 malformed JSON or callback · 401 missing, tampered, unknown-key or expired token ·
 * 403 a valid token used for another thread or call · 404 unknown thread · 405 not a POST (its body is not read) · 408
 * a request that did not arrive within `requestTimeoutMs` · 409 a second result the thread has not recorded yet, or a
 * result for a call whose subscription is active · 410 a revoked URL: its call was answered, its subscription ended or
 * its thread closed (the thread says so: {@link callbackGuard}) · 413 an output over the delivery limit, or a body over
 * `bodyLimit` (the call is answered with an error result all the same: `./large-callbacks`), or a view over
 * `views.maxViewBytes` · 414 a token longer than any token · 415 not JSON · 421 a `Host` the listener does not serve
 * (DNS rebinding: `../http/listener`) · 500 a failure inside, without its details. Every one of them is counted
 * (`./refusals`).
 */
import type { MetricMeter } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { guardListener, isLoopbackHost, type ListenerLimits, listenerServerOptions } from '../http/listener';
import { PayloadTooLargeError, ThreadNotFoundError } from '../inbox/errors';
import type { DeliveryResult } from '../inbox/deliver';
import type { DisplaySegment, InputMessage, PendingPrompt, ThreadEvent, ToolResultContent } from '../core/types';
import { displaySegmentError, inputLimitViolation } from '../core/validate';
import { callbackGuard, type CallbackStateCheck } from './callback-guard';
import {
  answeredTooLarge,
  callbackBodyOptions,
  type CallbackDelivery,
  DEFAULT_CALLBACK_BODY_LIMIT,
  deliverCallback,
} from './large-callbacks';
import { CALLBACK_PATH, refusalCounter } from './refusals';
import type { CallbackTokens } from './tokens';
import { activeTraceparent, inCallbackSpan, validTraceparent } from './trace-context';
import { DEFAULT_VIEW_LIMITS, type ViewLimits, viewStore, viewViolation } from './view-store';
import { checkCallback, type RapCallback, type RapToolResult } from './wire';

/**
 * Options of {@link startRapGateway}. Only `tokens` and `deliver` are required. The listener's limits
 * ({@link ListenerLimits}: `requestTimeoutMs`, `keepAliveTimeoutMs`, `maxConnections`) apply with their defaults.
 */
export interface RapGatewayOptions extends ListenerLimits {
  /** Mints and verifies callback tokens; workers that mint URLs for this gateway share its keys. */
  tokens: CallbackTokens;
  /** Puts a message into a thread's input queue (e.g. `AgentClient.deliver`). */
  deliver(message: InputMessage): Promise<DeliveryResult>;
  /** Live events for prompts and view updates (e.g. a worker's event hub). @default none */
  onEvent?(event: ThreadEvent): void;
  /** Base URL tools reach the gateway at. @default the address it listens on */
  publicUrl?: string;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port; see `url`) */
  port?: number;
  /**
   * Largest request body the gateway reads, on every route: the delivery limit of a client that stages into a store,
   * so nothing is buffered that could not be delivered. Outputs up to the delivery limit (32 MiB when `deliver` stages
   * into a store, 256 KiB otherwise) reach the thread; a larger one is answered with an error result and 413 (read, if
   * under this limit, so the model sees its beginning; not read past it). Raise it with the client's limit.
   * @default 33554432 (32 MiB)
   */
  bodyLimit?: number;
  /**
   * `Host` names (a `Host` header without its port) served besides the defaults: the names a reverse proxy forwards.
   * On a gateway bound to loopback, only loopback names and the host of `publicUrl` are served by default (any other
   * is a DNS-rebinding attempt: 421); on a gateway bound beyond loopback any `Host` is, unless this is set, which turns
   * the check on (the host of `publicUrl` is then served too).
   * @default none
   */
  allowedHosts?: readonly string[];
  /**
   * Bounds on the views kept for `views()` (RAP `view_update`): only the latest content per view type, at most
   * `maxViewsPerThread` per thread and `maxTotalViewBytes` in all (the least recently updated go first), and no view
   * over `maxViewBytes` (413).
   * @default { maxViewBytes: 1 MiB, maxViewsPerThread: 64, maxTotalViewBytes: 64 MiB }
   */
  views?: ViewLimits;
  /**
   * The thread's word on a call before its callback is delivered (e.g. `callbackStateOf(temporal)`): revoked URLs get
   * 410. Without it, only this gateway's memory of delivered results refuses replays (409).
   * @default none
   */
  callbackState?: CallbackStateCheck;
  /** An upper bound on a callback URL's life, for operators who want one. @default none (its thread revokes it) */
  tokenTtlMs?: number;
  /** The clock tokens are minted and checked with (tests move it). @default Date.now */
  now?: () => number;
  /**
   * Counts refused callbacks by HTTP status (`infinity_callbacks_rejected`), e.g. the Temporal runtime's meter: every
   * answer of 400 or more on a callback path, whichever hook, route or handler sent it, and what the HTTP parser
   * refuses (408, 431, 400), once each (`./refusals`).
   * @default none (not counted)
   */
  metricMeter?: MetricMeter;
}

/** A running gateway ({@link startRapGateway}): hand it to `loadRapToolsets` as `gateway`. */
export interface RapGateway {
  /** Where it listens (`publicUrl` is what callback URLs use). */
  readonly url: string;
  /** A fresh callback URL for one tool call of one thread. */
  callbackUrl(threadId: string, callId: string): string;
  /** The latest content of each view of a thread (RAP `view_update`) that the gateway still keeps (`views`). */
  views(threadId: string): Record<string, unknown>;
  /** The Fastify app, to mount more routes or inject requests in tests. */
  readonly app: FastifyInstance;
  /** Stops listening; callbacks already being handled finish first. */
  close(): Promise<void>;
}

const KNOWN_SEGMENTS = new Set(['text', 'diff', 'image']);

function resultContent(cb: RapToolResult): ToolResultContent[] {
  const items = (cb.content ?? []).map((c): ToolResultContent =>
    c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image', data: c.data, mediaType: c.mediaType },
  );
  // Non-empty `content` wins; otherwise `text`; neither is an empty text (RAP §3.3).
  return items.length > 0 ? items : [{ type: 'text', text: cb.text ?? '' }];
}

/** The callback as an input for the thread, or undefined for what never enters a queue. */
function toInput(cb: RapCallback): InputMessage | undefined {
  switch (cb.type) {
    case 'tool_result': {
      const msg: InputMessage = {
        id: `rap-tool-result-${cb.id}`,
        threadId: cb.group_id,
        content: { type: 'tool_result', toolCallId: cb.id, content: resultContent(cb) },
      };
      if (cb.subscription) msg.subscription = true;
      // Segments of an unknown type, or of a known type in another shape, are skipped (runtimes are lenient): a bad
      // segment must not cost the call its result. The raw text stays the last fallback.
      const segments = (cb.display_as ?? []).filter(
        (s) => KNOWN_SEGMENTS.has((s as { type?: string }).type ?? '') && displaySegmentError(s) === undefined,
      ) as DisplaySegment[];
      // The raw text is not appended as a fallback segment, and an image already in `content` is not kept twice: each
      // copy would double what the thread stores and carries. A UI renders the result's own content as the fallback.
      const images = new Set(
        msg.content.type === 'tool_result'
          ? msg.content.content.flatMap((c) => (c.type === 'image' ? [c.data] : []))
          : [],
      );
      const shown = segments.filter((s) => s.type !== 'image' || !images.has(s.content.data));
      if (shown.length > 0) msg.displayAs = shown;
      return msg;
    }
    case 'subscription_event':
      return {
        id: randomUUID(), // events have no id of their own: identical events are distinct (RAP §3.7)
        threadId: cb.group_id,
        content: { type: 'tool_result', toolCallId: cb.tool_call_id, content: [{ type: 'text', text: cb.text }] },
        synthetic: {
          type: 'subscription_event',
          toolCallId: cb.tool_call_id,
          associative: cb.associative ?? false,
          final: cb.final ?? false,
        },
      };
    case 'oauth':
    case 'user_choice': {
      const prompt: PendingPrompt =
        cb.type === 'oauth'
          ? { kind: 'oauth', authUrl: cb.auth_url }
          : {
              kind: 'user_choice',
              id: cb.id,
              prompt: cb.prompt,
              choices: cb.choices,
              default: cb.default,
              responseUrl: cb.response_url,
            };
      return {
        id: `rap-${cb.type === 'oauth' ? 'oauth' : 'user-choice'}-${cb.id}-${randomUUID()}`,
        threadId: cb.group_id,
        content: { type: 'text', text: '' },
        synthetic: { type: 'prompt', toolCallId: cb.id, prompt },
      };
    }
    case 'view_update':
      return undefined;
  }
}

/**
 * Callback URLs for a gateway that runs elsewhere (its own process, behind a load balancer): the worker mints them
 * with the same keys the gateway verifies with. No expiry unless `tokenTtlMs` is given.
 */
export function callbackUrlMinter(
  tokens: CallbackTokens,
  gatewayUrl: string,
  tokenTtlMs?: number,
  now: () => number = Date.now,
) {
  const base = gatewayUrl.replace(/\/+$/, '');
  const expiry = () => (tokenTtlMs === undefined ? {} : { expiresAt: now() + tokenTtlMs });
  // Minted inside the dispatching slice's span (when traced): the token carries it to the gateway (decision 61).
  const trace = () => {
    const traceparent = activeTraceparent();
    return traceparent === undefined ? {} : { traceparent };
  };
  return {
    callbackUrl: (threadId: string, callId: string) =>
      `${base}${CALLBACK_PATH}/${tokens.mint({ threadId, callId, ...expiry(), ...trace() })}`,
  };
}

/** Node's check of request timeouts, often enough for the timeout configured (0: none, Node's default interval). */
const checkingInterval = (requestTimeoutMs: number) =>
  requestTimeoutMs > 0 ? { connectionsCheckingInterval: Math.max(100, Math.min(30_000, requestTimeoutMs)) } : {};

/**
 * The `Host` names the gateway serves besides loopback ones (see `RapGatewayOptions.allowedHosts`): tool servers
 * reach it at `publicUrl`, so the host of that URL is one of them whenever the check is on.
 */
function allowedHostsOf(bindHost: string, options: RapGatewayOptions): readonly string[] | undefined {
  let publicHost: string | undefined;
  try {
    publicHost = options.publicUrl === undefined ? undefined : new URL(options.publicUrl).host;
  } catch {
    publicHost = undefined; // not a URL: callbacks cannot come through it either
  }
  const extra = publicHost === undefined ? [] : [publicHost];
  if (options.allowedHosts !== undefined) return [...options.allowedHosts, ...extra];
  return isLoopbackHost(bindHost) ? extra : undefined;
}

/**
 * Starts the RAP callback gateway: the HTTP endpoint tools POST their results, subscription events, OAuth requests,
 * choices and view updates to, each on its call's own signed callback URL. It checks each callback (see the module's
 * status codes) and delivers it into the thread's input queue through `deliver`. Run it in the worker's process or on
 * its own; workers that mint URLs for it share its `tokens`' keys.
 *
 * @example
 * ```ts
 * import { CallbackTokens, callbackStateOf, loadRapToolsets, startRapGateway } from 'infinity-temporal/rap';
 *
 * const key = Buffer.from(process.env.CALLBACK_KEY!, 'base64'); // 32 bytes or more (`newCallbackKey()`)
 * const tokens = new CallbackTokens({ current: 'k1', keys: { k1: key } });
 * const gateway = await startRapGateway({
 *   tokens,
 *   deliver: (message) => client.deliver(message), // an AgentClient of the workers' task queue
 *   callbackState: callbackStateOf(client.temporal), // revoked callback URLs get 410
 *   publicUrl: 'https://agents.example', // where tools reach it (behind your proxy)
 * });
 * const rap = await loadRapToolsets({ servers: [{ url: 'http://ci-tools:3001' }], gateway });
 * // the servers' tools for each new agent tree, and their cancellation and close notices
 * await createAgentWorker({ connection, taskQueue, store, model, toolSources: [rap], toolLifecycle: [rap] });
 * ```
 */
export async function startRapGateway(options: RapGatewayOptions): Promise<RapGateway> {
  const host = options.host ?? '127.0.0.1';
  const bodyLimit = options.bodyLimit ?? DEFAULT_CALLBACK_BODY_LIMIT;
  const server = listenerServerOptions(options);
  const refusals = refusalCounter(options.metricMeter);
  const app = Fastify({
    logger: false,
    // The same limit as the callback route's: no route reads a larger body (and the 405 route reads none).
    bodyLimit,
    // Tokens carry the thread and call ids: longer than Fastify's default parameter limit.
    routerOptions: { maxParamLength: 4096 },
    ...server,
    // Node checks the request timeout every 30 s by default, so a shorter timeout would be up to 30 s late.
    http: { ...server.http, ...checkingInterval(server.requestTimeout) },
    ...refusals.serverOptions,
  });
  // First: the Host check runs before any other hook, and the connection cap applies once it listens.
  const allowedHosts = allowedHostsOf(host, options);
  guardListener(app, {
    bindHost: host,
    ...(options.maxConnections !== undefined && { maxConnections: options.maxConnections }),
    ...(allowedHosts !== undefined && { allowedHosts }),
  });
  refusals.install(app);
  const now = options.now ?? Date.now;
  const guard = callbackGuard(options.callbackState);
  const viewLimits = { ...DEFAULT_VIEW_LIMITS, ...options.views };
  const views = viewStore(viewLimits);
  // Counted where it leaves (`./refusals`), whichever hook, route or handler sends it.
  const refuse = (reply: FastifyReply, code: number, error: string) => reply.code(code).send({ error });

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH', 'HEAD'],
    url: `${CALLBACK_PATH}/:token`,
    // Answered before the body is read: a method that takes none is not worth buffering one for.
    onRequest: async (_req, reply) => refuse(reply.header('allow', 'POST'), 405, 'POST only'),
    handler: async (_req, reply) => refuse(reply.header('allow', 'POST'), 405, 'POST only'), // not reached
  });

  const bodyOptions = callbackBodyOptions({
    limit: bodyLimit,
    verify: (token) => options.tokens.verify(token, now()),
    resultId: (callId) => `rap-tool-result-${callId}`,
    answerUnread: async ({ threadId, callId }, answer) => {
      const cb = { type: 'tool_result', group_id: threadId, id: callId } as const;
      if (!(await guard.admit(cb, threadId, callId)).ok) return false;
      const delivered = await options.deliver(answer).then(
        (r) => r.delivered,
        () => false,
      );
      if (!delivered) guard.undo(cb, threadId, callId);
      return delivered;
    },
  });

  app.post<{ Params: { token: string }; Body: unknown }>(`${CALLBACK_PATH}/:token`, bodyOptions, async (req, reply) => {
    const check = options.tokens.verify(req.params.token, now());
    if (!check.ok) return refuse(reply, 401, `callback token refused: ${check.reason}`);
    const { claims } = check;
    const parsed = checkCallback(req.body);
    if (!parsed.ok) return refuse(reply, 400, `Bad request: ${parsed.error}`);
    const cb = parsed.value;
    const callId =
      cb.type === 'subscription_event' ? cb.tool_call_id : cb.type === 'view_update' ? claims.callId : cb.id;
    if (cb.group_id !== claims.threadId || callId !== claims.callId) {
      return refuse(reply, 403, 'this callback URL belongs to another thread or tool call');
    }
    // A view's content is any JSON: checked for shape and size like an input before anything serializes or keeps it.
    let viewBytes = 0;
    if (cb.type === 'view_update') {
      const shape = viewViolation(cb.content);
      if (shape) return refuse(reply, 400, `Bad request: ${shape}`);
      viewBytes = Buffer.byteLength(JSON.stringify(cb.content));
      if (viewBytes > viewLimits.maxViewBytes)
        return refuse(
          reply,
          413,
          `view content of ${viewBytes} bytes is over the limit of ${viewLimits.maxViewBytes} bytes`,
        );
    }
    const admission = await guard.admit(cb, claims.threadId, claims.callId);
    if (!admission.ok) return refuse(reply, admission.status, admission.error);

    if (cb.type === 'view_update') {
      views.set(cb.group_id, cb.view_type, cb.content, viewBytes);
      options.onEvent?.({ threadId: cb.group_id, type: 'view_update', viewType: cb.view_type, content: cb.content });
      return { ok: true };
    }
    const input = toInput(cb)!;
    // Before anything serializes it: display segments pass through as sent, and a deeply nested or very wide one
    // would overflow the stack (or burden every slice) downstream.
    // The display segments as sent, before the malformed ones are skipped: a poison shape is refused, not skipped.
    const sent =
      cb.type === 'tool_result' && cb.display_as !== undefined ? { ...input, displayAs: cb.display_as } : input;
    const shape = inputLimitViolation(sent);
    if (shape) {
      guard.undo(cb, claims.threadId, claims.callId);
      return refuse(reply, 400, `Bad request: ${shape}`);
    }
    let delivery: CallbackDelivery;
    try {
      const requestTraceparent = validTraceparent(req.headers.traceparent);
      const traced = {
        threadId: claims.threadId,
        callId: claims.callId,
        type: cb.type,
        ...(claims.traceparent && { traceparent: claims.traceparent }),
        ...(requestTraceparent && { requestTraceparent }),
      };
      delivery = await inCallbackSpan(traced, () => deliverCallback(options.deliver, input));
    } catch (e) {
      guard.undo(cb, claims.threadId, claims.callId);
      if (e instanceof ThreadNotFoundError) return refuse(reply, 404, `unknown thread ${cb.group_id}`);
      if (e instanceof PayloadTooLargeError) return refuse(reply, 413, e.message); // nothing to answer for (a prompt)
      throw e;
    }
    const { result } = delivery;
    // The thread closed between the check and the signal: its URLs are revoked like any closed thread's.
    if (!result.delivered) return refuse(reply, 410, 'this callback URL was revoked: its thread is closed');
    if (delivery.tooLarge) return refuse(reply, 413, answeredTooLarge(delivery.tooLarge));
    if (input.synthetic?.type === 'prompt')
      options.onEvent?.({
        threadId: cb.group_id,
        type: 'prompt',
        toolCallId: claims.callId,
        prompt: input.synthetic.prompt,
      });
    return { ok: true, delivered: true };
  });

  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('RAP gateway: no TCP address');
  const url = options.publicUrl?.replace(/\/+$/, '') ?? `http://${host}:${address.port}`;
  return {
    url,
    app,
    callbackUrl: callbackUrlMinter(options.tokens, url, options.tokenTtlMs, now).callbackUrl,
    views: (threadId) => views.views(threadId),
    close: () => app.close(),
  };
}
