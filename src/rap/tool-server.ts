/**
 * `createRapToolServer`: a RAP tool server in a few lines. It serves the manifest, acknowledges every invocation at
 * once, runs the handler in the background and posts its result, events, OAuth requests and choices to the call's
 * callback URL (retrying 5xx and network failures, never 4xx). It honours `/cancel_tool_call` (the handler's signal
 * aborts) and `/close_thread`, and only ever emits what Infinity's runtime can parse (text/diff/image). A 410 Gone
 * from the runtime means the call's URL was revoked (answered, subscription ended, thread closed): the call ends
 * there, as if cancelled, in case the cancellation notice was lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Ajv, { type ValidateFunction } from 'ajv';
import Fastify, { type FastifyInstance } from 'fastify';
import type { RapCallback, RapContentItem, RapDisplaySegment, RapManifest, RapToolDef } from './wire';

export interface RapResult {
  text?: string;
  content?: RapContentItem[];
  displayAs?: RapDisplaySegment[];
}

export interface RapSubscription {
  /** One event; `associative` inlines it in the thread, otherwise the runtime gives it a child thread. */
  event(text: string, options?: { associative?: boolean; final?: boolean }): Promise<void>;
  readonly active: boolean;
}

export interface RapCallContext {
  threadId: string;
  toolCallId: string;
  callId: string | null;
  ancestors: string[];
  userId?: string;
  /** Aborts on `/cancel_tool_call` for this call, `/close_thread` for its thread, or a 410 from its callback URL. */
  signal: AbortSignal;
  /** The call's result; once. */
  result(result: string | RapResult): Promise<void>;
  /** An error result the model can read (`Error: …`). */
  error(message: string): Promise<void>;
  /** Confirms a subscription (the call's result) and returns the handle that sends its events. */
  subscribe(text: string): Promise<RapSubscription>;
  /** Asks the user to authorize; send the result yourself once the token arrives. */
  oauth(authUrl: string): Promise<void>;
  /** Asks the user to choose; resolves with the chosen index (the default on dismissal). */
  choose(prompt: string, choices: string[], defaultIndex?: number): Promise<number>;
  /** Updates a display-only view of the thread. */
  view(viewType: string, content: unknown): Promise<void>;
}

export interface RapToolHandler extends RapToolDef {
  /** Returning a string (or result) sends it as the result, unless one was sent already; throwing sends an error. */
  handler(args: Record<string, unknown>, ctx: RapCallContext): Promise<string | RapResult | void> | string | RapResult | void;
}

export interface RapToolServerOptions {
  name: string;
  description?: string;
  tools: RapToolHandler[];
  /** Called on `/close_thread` with a thread id that is safe to use in paths (ids with `/`, `\` or `..` never arrive). */
  onCloseThread?(threadId: string): void | Promise<void>;
  /** How tools reach this server (default: the Host header of the manifest request, `http://` on loopback). */
  publicUrl?: string;
  host?: string;
  port?: number;
  /** Callback attempts on 5xx or network failure (default 4). */
  callbackAttempts?: number;
  callbackBackoffMs?: number;
  /** Headers on every callback (e.g. authorization for a gateway that wants it). */
  callbackHeaders?: Record<string, string>;
  /** Adds routes of your own (webhooks, OAuth redirects) before the server starts listening. */
  routes?(app: FastifyInstance): void;
}

export interface RapToolServer {
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** The runtime refused a callback for good (4xx), or it could not be delivered after retries. */
export class RapCallbackError extends Error {
  override readonly name = 'RapCallbackError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const SEGMENTS = new Set(['text', 'diff', 'image']);
const SAFE_THREAD_ID = /^(?!.*\.\.)[^/\\\0]{1,512}$/;

function checkOutgoing(r: RapResult): void {
  if (r.text === undefined && (r.content === undefined || r.content.length === 0)) throw new TypeError('a result needs text or content');
  for (const s of r.displayAs ?? []) if (!SEGMENTS.has(s.type)) throw new TypeError(`display segment type '${s.type}' is not text, diff or image`);
  for (const c of r.content ?? []) if (c.type !== 'text' && c.type !== 'image') throw new TypeError(`content item type '${(c as { type: string }).type}' is not text or image`);
}

export async function createRapToolServer(options: RapToolServerOptions): Promise<RapToolServer> {
  const app = Fastify({ logger: false });
  const ajv = new Ajv({ allErrors: true, strict: false });
  const tools = new Map<string, { def: RapToolHandler; validate: ValidateFunction }>();
  for (const t of options.tools) tools.set(t.name, { def: t, validate: ajv.compile(t.inputSchema) });
  const running = new Map<string, { threadId: string; abort: AbortController }>();
  const choices = new Map<string, (selected: number) => void>();
  const attempts = options.callbackAttempts ?? 4;
  const backoff = options.callbackBackoffMs ?? 200;
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  /**
   * Where this request says tools reach the server, like Infinity's servers: the Host header, `http` on loopback only.
   * Per request, so a server behind two names (or a proxy added later) answers each with its own.
   */
  const baseOf = (host: string | undefined) => {
    if (publicUrl) return publicUrl;
    const h = host ?? '127.0.0.1';
    return `${/^(localhost|127\.0\.0\.1)(:|$)/.test(h) ? 'http' : 'https'}://${h}`;
  };
  // Notices and callbacks from runtimes that label their JSON otherwise (or not at all) are still read: RAP says
  // `/cancel_tool_call` and `/close_thread` answer 200 whatever they receive.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, body === '' ? {} : (JSON.parse(body as string) as unknown));
    } catch {
      done(null, {});
    }
  });

  const callback = async (url: string, body: RapCallback): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      let status: number | undefined;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...options.callbackHeaders },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        await res.body?.cancel();
        status = res.status;
        if (res.ok) return;
        if (status === 410) throw new RapCallbackError('callback URL revoked (HTTP 410): the call was answered, its subscription ended or its thread closed', status);
        if (status < 500) throw new RapCallbackError(`callback refused with HTTP ${status}`, status);
      } catch (e) {
        if (e instanceof RapCallbackError) throw e;
      }
      if (attempt >= attempts) throw new RapCallbackError(`callback failed after ${attempts} attempts${status ? ` (HTTP ${status})` : ''}`, status);
      await sleep(backoff * 2 ** (attempt - 1));
    }
  };

  app.get('/.well-known/rap-toolset', async (req) => {
    const manifest: RapManifest = {
      name: options.name,
      ...(options.description && { description: options.description }),
      endpoint: `${baseOf(req.headers.host)}/invoke`,
      tools: options.tools.map(({ name, description, inputSchema, annotations, displayScript }) => ({
        name,
        description,
        inputSchema,
        ...(annotations && { annotations }),
        ...(displayScript && { displayScript }),
      })),
    };
    return manifest;
  });

  app.post<{ Body: Record<string, unknown> }>('/invoke', async (req, reply) => {
    const b = req.body;
    const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
    const id = str(b?.id);
    const groupId = str(b?.group_id);
    const callbackUrl = str(b?.callback_url);
    const operation = typeof b?.operation === 'string' ? b.operation : undefined;
    // Without these there is nobody to answer: refuse now (what Infinity's servers do, 422).
    if (!id || !groupId || !callbackUrl || operation === undefined) return reply.code(422).send('missing operation, id, callback_url or group_id');
    const callId = typeof b.call_id === 'string' ? b.call_id : null;
    const ids = { group_id: groupId, id, call_id: callId };
    const abort = new AbortController();
    running.set(id, { threadId: groupId, abort });
    let answered = false;
    let subscribed = false;
    // Nothing can arrive through a revoked URL again: end the call (its signal aborts, a subscription stops).
    const send = async (body: RapCallback) => {
      try {
        await callback(callbackUrl, body);
      } catch (e) {
        if (e instanceof RapCallbackError && e.status === 410) abort.abort(e);
        throw e;
      }
    };
    const result = async (r: string | RapResult, subscription = false) => {
      if (answered) throw new Error(`call ${id} already has its result`);
      const res = typeof r === 'string' ? { text: r } : r;
      checkOutgoing(res);
      answered = true;
      await send({
        type: 'tool_result',
        ...ids,
        ...(res.text !== undefined && { text: res.text }),
        ...(res.content && { content: res.content }),
        ...(res.displayAs && { display_as: res.displayAs }),
        ...(subscription && { subscription: true }),
      });
    };
    const ctx: RapCallContext = {
      threadId: groupId,
      toolCallId: id,
      callId,
      ancestors: Array.isArray(b.thread_ancestors) ? (b.thread_ancestors as string[]) : [],
      ...(typeof b.user_id === 'string' && { userId: b.user_id }),
      signal: abort.signal,
      result: (r) => result(r),
      error: (m) => result(m.startsWith('Error: ') ? m : `Error: ${m}`),
      subscribe: async (text) => {
        await result(text, true);
        // Cancelled (or revoked) while the start result was on its way: a subscription born ended.
        let active = !abort.signal.aborted;
        subscribed = active; // the call stays cancellable after its handler returns, until the subscription ends
        abort.signal.addEventListener('abort', () => ((active = false), running.delete(id)), { once: true });
        return {
          get active() {
            return active;
          },
          event: async (t, o = {}) => {
            if (!active) throw new Error(`subscription ${id} has ended`);
            if (o.final) {
              active = false;
              running.delete(id);
            }
            await send({
              type: 'subscription_event',
              group_id: groupId,
              tool_call_id: id,
              text: t,
              ...(o.associative && { associative: true }),
              ...(o.final && { final: true }),
            });
          },
        };
      },
      oauth: (authUrl) => send({ type: 'oauth', ...ids, auth_url: authUrl }),
      choose: async (prompt, list, defaultIndex = 0) => {
        if (list.length === 0) throw new TypeError('choose needs at least one choice');
        if (!Number.isInteger(defaultIndex) || defaultIndex < 0 || defaultIndex >= list.length) {
          throw new TypeError(`choose: the default ${defaultIndex} is not one of 0..${list.length - 1}`);
        }
        // A choice is identified by its call (RAP §5.2): one open choice per call at a time.
        const chosen = new Promise<number>((resolve) => choices.set(id, resolve));
        const responseUrl = `${baseOf(req.headers.host)}/user_choice_response`;
        await send({ type: 'user_choice', group_id: groupId, id, call_id: callId, prompt, choices: list, default: defaultIndex, response_url: responseUrl });
        return chosen;
      },
      view: async (viewType, content) => {
        if (content === undefined) throw new TypeError(`view '${viewType}' needs content`);
        await send({ type: 'view_update', group_id: groupId, view_type: viewType, content });
      },
    };
    // Acknowledge first; the work happens after the response (RAP §2.2).
    setImmediate(() => {
      void (async () => {
        try {
          const tool = tools.get(operation);
          if (!tool) return await ctx.error(`unknown operation: ${operation}`);
          const args = (b.arguments ?? {}) as Record<string, unknown>;
          if (!tool.validate(args)) return await ctx.error(`invalid arguments: ${ajv.errorsText(tool.validate.errors)}`);
          const out = await tool.def.handler(args, ctx);
          if (!answered && out !== undefined) await ctx.result(out);
        } catch (e) {
          if (!answered && !(e instanceof RapCallbackError)) await ctx.error(e instanceof Error ? e.message : String(e)).catch(() => undefined);
        } finally {
          if (!subscribed) running.delete(id);
        }
      })();
    });
    return reply.code(200).send('OK');
  });

  app.post<{ Body: { thread_id?: unknown; tool_call_id?: unknown } }>('/cancel_tool_call', async (req, reply) => {
    const callId = req.body?.tool_call_id;
    if (typeof callId === 'string') running.get(callId)?.abort.abort(new Error('cancelled by the runtime'));
    return reply.code(200).send('');
  });

  app.post<{ Body: { thread_id?: unknown } }>('/close_thread', async (req, reply) => {
    const threadId = req.body?.thread_id;
    if (typeof threadId === 'string' && SAFE_THREAD_ID.test(threadId)) {
      for (const r of running.values()) if (r.threadId === threadId) r.abort.abort(new Error('thread closed'));
      await Promise.resolve(options.onCloseThread?.(threadId)).catch(() => undefined);
    }
    return reply.code(200).send('');
  });

  app.post<{ Body: { id?: unknown; selected?: unknown } }>('/user_choice_response', async (req, reply) => {
    const { id, selected } = req.body ?? {};
    const resolve = choices.get(String(id));
    if (resolve && Number.isInteger(selected)) {
      choices.delete(String(id));
      resolve(selected as number);
    }
    return reply.code(200).send('');
  });

  options.routes?.(app);
  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('RAP tool server: no TCP address');
  return { url: `http://${options.host ?? '127.0.0.1'}:${address.port}`, app, close: () => app.close() };
}
