/**
 * `createRapToolServer`: a RAP tool server in a few lines. It serves the manifest, acknowledges every invocation at
 * once, runs the handler in the background and posts its result, events, OAuth requests and choices to the call's
 * callback URL (retrying 5xx and network failures, never 4xx). It honours `/cancel_tool_call` (the handler's signal
 * aborts) and `/close_thread`, and only ever emits what Infinity's runtime can parse (text/diff/image). A 410 Gone
 * from the runtime means the call's URL was revoked (answered, subscription ended, thread closed): the call ends
 * there, as if cancelled, in case the cancellation notice was lost.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import Fastify, { type FastifyInstance } from 'fastify';
import { callbackPoster, callContext, type RapCallContext, RapCallbackError, type RapResult } from './tool-server-call';
import type { RapManifest, RapToolDef } from './wire';

export { RapCallbackError, type RapCallContext, type RapResult, type RapSubscription } from './tool-server-call';

export interface RapToolHandler extends RapToolDef {
  /** Returning a string (or result) sends it as the result, unless one was sent already; throwing sends an error. */
  handler(
    args: Record<string, unknown>,
    ctx: RapCallContext,
  ): Promise<string | RapResult | void> | string | RapResult | void;
}

/** Options of {@link createRapToolServer}. Only `name` and `tools` are required. */
export interface RapToolServerOptions {
  /** The toolset's name in its manifest. */
  name: string;
  /** The toolset's description in its manifest. @default none */
  description?: string;
  /** The tools, each with its JSON Schema and handler. */
  tools: RapToolHandler[];
  /**
   * Called on `/close_thread` with a thread id that is safe to use in paths (ids with `/`, `\` or `..` never arrive).
   * @default none
   */
  onCloseThread?(threadId: string): void | Promise<void>;
  /** How tools reach this server. @default the Host header of each manifest request (`http://` on loopback only) */
  publicUrl?: string;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port; see `url`) */
  port?: number;
  /** Callback attempts on 5xx or network failure; a 4xx is never retried. @default 4 */
  callbackAttempts?: number;
  /** First wait between callback attempts, doubling. @default 200 */
  callbackBackoffMs?: number;
  /** Headers on every callback (e.g. authorization for a gateway that wants it). @default none */
  callbackHeaders?: Record<string, string>;
  /** Adds routes of your own (webhooks, OAuth redirects) before the server starts listening. @default none */
  routes?(app: FastifyInstance): void;
}

export interface RapToolServer {
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

const SAFE_THREAD_ID = /^(?!.*\.\.)[^/\\\0]{1,512}$/;

export async function createRapToolServer(options: RapToolServerOptions): Promise<RapToolServer> {
  const app = Fastify({ logger: false });
  const ajv = new Ajv({ allErrors: true, strict: false });
  const tools = new Map<string, { def: RapToolHandler; validate: ValidateFunction }>();
  for (const t of options.tools) tools.set(t.name, { def: t, validate: ajv.compile(t.inputSchema) });
  const running = new Map<string, { threadId: string; abort: AbortController }>();
  const choices = new Map<string, (selected: number) => void>();
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

  const post = callbackPoster(options);

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
    if (!id || !groupId || !callbackUrl || operation === undefined)
      return reply.code(422).send('missing operation, id, callback_url or group_id');
    const abort = new AbortController();
    running.set(id, { threadId: groupId, abort });
    const choiceResponseUrl = `${baseOf(req.headers.host)}/user_choice_response`;
    const call = callContext({
      body: b,
      id,
      groupId,
      callbackUrl,
      abort,
      post,
      choices,
      choiceResponseUrl,
      onEnded: () => running.delete(id),
    });
    const { ctx } = call;
    // Acknowledge first; the work happens after the response (RAP §2.2).
    setImmediate(() => {
      void (async () => {
        try {
          const tool = tools.get(operation);
          if (!tool) return await ctx.error(`unknown operation: ${operation}`);
          const args = (b.arguments ?? {}) as Record<string, unknown>;
          if (!tool.validate(args))
            return await ctx.error(`invalid arguments: ${ajv.errorsText(tool.validate.errors)}`);
          const out = await tool.def.handler(args, ctx);
          if (!call.answered && out !== undefined) await ctx.result(out);
        } catch (e) {
          if (!call.answered && !(e instanceof RapCallbackError))
            await ctx.error(e instanceof Error ? e.message : String(e)).catch(() => undefined);
        } finally {
          if (!call.subscribed) running.delete(id);
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
