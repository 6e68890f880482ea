/**
 * The RAP callback gateway: where tools POST results, events, OAuth requests, user choices and view updates. Each
 * callback URL carries a token bound to one (thread, tool call) ({@link CallbackTokens}); the gateway checks it, checks
 * the body against the protocol and against the token, and turns the callback into a message for the thread's input
 * queue. Anything forged, mismatched, replayed, malformed or oversized is refused before a thread is touched.
 *
 * Status codes: 200 accepted · 400 malformed JSON or callback · 401 missing, tampered, unknown-key or expired token ·
 * 403 a valid token used for another thread or call · 404 unknown thread · 405 not a POST · 409 a result for a call
 * that already has one (replay), or an event after the subscription's final one · 413 body too large ·
 * 415 not JSON.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { ThreadNotFoundError } from '../client/errors';
import type { DeliveryResult } from '../client/deliver';
import type { DisplaySegment, InputMessage, PendingPrompt, ThreadEvent, ToolResultContent } from '../core/types';
import type { CallbackTokens } from './tokens';
import { checkCallback, type RapCallback, type RapToolResult } from './wire';

export interface RapGatewayOptions {
  tokens: CallbackTokens;
  /** Puts a message into a thread's input queue (e.g. `AgentClient.deliver`). */
  deliver(message: InputMessage): Promise<DeliveryResult>;
  /** Live events for prompts and view updates (e.g. a worker's event hub). */
  onEvent?(event: ThreadEvent): void;
  /** Base URL tools reach the gateway at (default: the address it listens on). */
  publicUrl?: string;
  host?: string;
  port?: number;
  /** Largest callback body (default 1 MiB; inputs above 256 KiB are refused by delivery anyway). */
  bodyLimit?: number;
  /** How long a callback URL stays valid (default 30 days: subscriptions run long). */
  tokenTtlMs?: number;
}

export interface RapGateway {
  readonly url: string;
  /** A fresh callback URL for one tool call of one thread. */
  callbackUrl(threadId: string, callId: string): string;
  /** The latest content of each view of a thread (RAP `view_update`). */
  views(threadId: string): Record<string, unknown>;
  /** The Fastify app, to mount more routes or inject requests in tests. */
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

const KNOWN_SEGMENTS = new Set(['text', 'diff', 'image']);

function resultContent(cb: RapToolResult): ToolResultContent[] {
  const items = (cb.content ?? []).map((c): ToolResultContent => (c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image', data: c.data, mediaType: c.mediaType }));
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
      // Unknown segment types are skipped (runtimes are lenient); the raw text stays the last fallback.
      const segments = (cb.display_as ?? []).filter((s) => KNOWN_SEGMENTS.has((s as { type?: string }).type ?? '')) as DisplaySegment[];
      if (segments.length > 0) msg.displayAs = cb.text ? [...segments, { type: 'text', content: cb.text }] : segments;
      return msg;
    }
    case 'subscription_event':
      return {
        id: randomUUID(), // events have no id of their own: identical events are distinct (RAP §3.7)
        threadId: cb.group_id,
        content: { type: 'tool_result', toolCallId: cb.tool_call_id, content: [{ type: 'text', text: cb.text }] },
        synthetic: { type: 'subscription_event', toolCallId: cb.tool_call_id, associative: cb.associative ?? false, final: cb.final ?? false },
      };
    case 'oauth':
    case 'user_choice': {
      const prompt: PendingPrompt =
        cb.type === 'oauth'
          ? { kind: 'oauth', authUrl: cb.auth_url }
          : { kind: 'user_choice', id: cb.id, prompt: cb.prompt, choices: cb.choices, default: cb.default, responseUrl: cb.response_url };
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

const DEFAULT_TTL_MS = 30 * 24 * 3600_000;

/**
 * Callback URLs for a gateway that runs elsewhere (its own process, behind a load balancer): the worker mints them
 * with the same keys the gateway verifies with.
 */
export function callbackUrlMinter(tokens: CallbackTokens, gatewayUrl: string, tokenTtlMs = DEFAULT_TTL_MS) {
  const base = gatewayUrl.replace(/\/+$/, '');
  return { callbackUrl: (threadId: string, callId: string) => `${base}/rap/callback/${tokens.mint({ threadId, callId, expiresAt: Date.now() + tokenTtlMs })}` };
}

export async function startRapGateway(options: RapGatewayOptions): Promise<RapGateway> {
  // Tokens carry the thread and call ids: longer than Fastify's default parameter limit.
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit ?? 1024 * 1024, routerOptions: { maxParamLength: 4096 } });
  const ttl = options.tokenTtlMs ?? DEFAULT_TTL_MS;
  // Calls whose result was delivered, and subscriptions that ended: later callbacks for them are replays. Bounded
  // by expiry: a token is useless after it, so its entry can go.
  const spent = new Map<string, number>();
  const views = new Map<string, Map<string, unknown>>();
  const key = (threadId: string, callId: string, what: 'result' | 'events') => `${what}\u0000${threadId}\u0000${callId}`;
  let pruned = Date.now();
  /** Drops entries whose tokens expired, at most once a minute (the scan is linear). */
  const forget = () => {
    const now = Date.now();
    if (now - pruned < 60_000) return;
    pruned = now;
    for (const [k, expiry] of spent) if (expiry <= now) spent.delete(k);
  };
  const refuse = (reply: FastifyReply, code: number, error: string) => reply.code(code).send({ error });

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH', 'HEAD'],
    url: '/rap/callback/:token',
    handler: async (_req, reply) => refuse(reply, 405, 'POST only'),
  });

  app.post<{ Params: { token: string }; Body: unknown }>('/rap/callback/:token', async (req, reply) => {
    const check = options.tokens.verify(req.params.token);
    if (!check.ok) return refuse(reply, 401, `callback token refused: ${check.reason}`);
    const { claims } = check;
    const parsed = checkCallback(req.body);
    if (!parsed.ok) return refuse(reply, 400, `Bad request: ${parsed.error}`);
    const cb = parsed.value;
    const callId = cb.type === 'subscription_event' ? cb.tool_call_id : cb.type === 'view_update' ? claims.callId : cb.id;
    if (cb.group_id !== claims.threadId || callId !== claims.callId) {
      return refuse(reply, 403, 'this callback URL belongs to another thread or tool call');
    }
    forget();
    const resultKey = key(claims.threadId, claims.callId, 'result');
    const eventsKey = key(claims.threadId, claims.callId, 'events');
    if (cb.type === 'tool_result' && spent.has(resultKey)) return refuse(reply, 409, 'this tool call already has its result');
    if (cb.type === 'subscription_event' && spent.has(eventsKey)) return refuse(reply, 409, 'this subscription has ended');

    if (cb.type === 'view_update') {
      let byType = views.get(cb.group_id);
      if (!byType) views.set(cb.group_id, (byType = new Map()));
      byType.set(cb.view_type, cb.content);
      options.onEvent?.({ threadId: cb.group_id, type: 'view_update', viewType: cb.view_type, content: cb.content });
      return { ok: true };
    }
    const input = toInput(cb)!;
    let result: DeliveryResult;
    try {
      result = await options.deliver(input);
    } catch (e) {
      if (e instanceof ThreadNotFoundError) return refuse(reply, 404, `unknown thread ${cb.group_id}`);
      throw e;
    }
    if (cb.type === 'tool_result') spent.set(resultKey, claims.expiresAt);
    if (cb.type === 'subscription_event' && cb.final) spent.set(eventsKey, claims.expiresAt);
    if (input.synthetic?.type === 'prompt') options.onEvent?.({ threadId: cb.group_id, type: 'prompt', toolCallId: claims.callId, prompt: input.synthetic.prompt });
    // A closed thread accepts and ignores (RAP §3.6); the tool must not retry.
    return { ok: true, delivered: result.delivered };
  });

  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('RAP gateway: no TCP address');
  const url = options.publicUrl?.replace(/\/+$/, '') ?? `http://${options.host ?? '127.0.0.1'}:${address.port}`;
  return {
    url,
    app,
    callbackUrl: callbackUrlMinter(options.tokens, url, ttl).callbackUrl,
    views: (threadId) => Object.fromEntries(views.get(threadId) ?? []),
    close: () => app.close(),
  };
}
