/**
 * `createRapToolServer`: a RAP tool server in a few lines. It serves the manifest, acknowledges every invocation at
 * once, runs the handler in the background and posts its result, events, OAuth requests and choices to the call's
 * callback URL (retrying 5xx and network failures, never 4xx). It honours `/cancel_tool_call` (the handler's signal
 * aborts) and `/close_thread`, and only ever emits what Infinity's runtime can parse (text/diff/image). A 410 Gone
 * from the runtime means the call's URL was revoked (answered, subscription ended, thread closed): the call ends
 * there, as if cancelled, in case the cancellation notice was lost.
 *
 * Secure by default: its RAP routes want a bearer token, a random one made at start unless one is given (`server.token`,
 * for the worker's `RapServerConfig.token`), or an `authorize` check; off loopback a token or `authorize` must be given;
 * it posts callbacks only to allowed origins (loopback unless `callbackOrigins` says otherwise); its manifest names the
 * URL it was configured with, never a request's `Host`; it sits behind the listeners' common guard.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { guardListener, isLoopbackHost, type ListenerLimits, listenerServerOptions } from '../http/listener';
import {
  callbackUrlRefusal,
  checkToolServerConfig,
  originSet,
  rapRouteGuard,
  sameSecret,
  toolServerToken,
  urlHost,
} from './tool-server-auth';
import {
  callbackPoster,
  callContext,
  type OpenChoice,
  type RapCallContext,
  RapCallbackError,
  type RapResult,
} from './tool-server-call';
import type { RapManifest, RapToolDef } from './wire';

export { RapCallbackError, type RapCallContext, type RapResult, type RapSubscription } from './tool-server-call';

/** One tool of a {@link createRapToolServer} server: its manifest entry and the function that runs a call. */
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
  /**
   * The URL runtimes reach this server at (behind a proxy, its public URL): the manifest's `endpoint` and each
   * choice's `response_url` hang off it. Required for a wildcard bind (`0.0.0.0`, `::`).
   * @default the listen address, `http://<host>:<port>`
   */
  publicUrl?: string;
  /**
   * The address to bind. Beyond loopback, `token` or `authorize` is required.
   * @default '127.0.0.1'
   */
  host?: string;
  /** @default 0 (a free port; see `url`) */
  port?: number;
  /** Callback attempts on 5xx or network failure; a 4xx is never retried. @default 4 */
  callbackAttempts?: number;
  /** First wait between callback attempts, doubling. @default 200 */
  callbackBackoffMs?: number;
  /**
   * Headers on every callback (e.g. authorization for a gateway that wants it). They go only to allowed callback URLs
   * (`callbackOrigins`), and never through a redirect.
   * @default none
   */
  callbackHeaders?: Record<string, string>;
  /**
   * The bearer token runtimes must send (`Authorization: Bearer <token>`, at least 16 characters) on the RAP routes:
   * the manifest, `/invoke`, `/cancel_tool_call` and `/close_thread`. The runtime sends it with its server config's
   * `token` (`loadRapToolsets({ servers: [{ url: server.url, token: server.token }] })`). `/user_choice_response` is
   * answered by the user's client instead, with the key in the choice's URL.
   *
   * `false` turns the token off, on a loopback bind only: then any process on the machine that reaches the port may
   * invoke the tools and have their callbacks, with `callbackHeaders`, posted to a loopback URL of its own. Only for a
   * runtime that cannot send a token.
   * @default a random token made at start (`RapToolServer.token`) on a loopback bind, unless `authorize` is given
   * (which then decides alone); beyond loopback, `token` or `authorize` must be given
   */
  token?: string | false;
  /**
   * A check of your own on every request to the RAP routes (mTLS identity, an API gateway's header, ...), after the
   * token when both are set: false answers 403. Given without `token`, it decides alone: no token is made up.
   * @default none
   */
  authorize?(req: FastifyRequest): boolean | Promise<boolean>;
  /**
   * Origins (`https://gateway.example.com:8443`) an invocation's `callback_url` may point at; any other invocation is
   * refused (403) before anything, credentials included, is sent there. Given, it replaces the default (list loopback
   * origins too if you want them).
   * @default loopback origins only (`localhost`, `127.x.x.x`, `[::1]`, any port): a runtime on this machine
   */
  callbackOrigins?: readonly string[];
  /**
   * `Host` names accepted besides loopback names (the listeners' guard, src/http/listener.ts); `publicUrl`'s host is
   * added on a loopback bind. On a bind beyond loopback, giving it turns the `Host` check on.
   * @default none
   */
  allowedHosts?: readonly string[];
  /** Request and keep-alive timeouts, connection cap. @default DEFAULT_LISTENER_LIMITS */
  limits?: ListenerLimits;
  /** Adds routes of your own (webhooks, OAuth redirects) before the server starts listening. @default none */
  routes?(app: FastifyInstance): void;
}

/** A running tool server ({@link createRapToolServer}). */
export interface RapToolServer {
  /** Where it listens: give it to the runtime (`loadRapToolsets({ servers: [{ url }] })`, `worker --rap <url>`). */
  url: string;
  /**
   * The bearer token its RAP routes want (`options.token`, or the random one made at start): give it to the runtime
   * with the URL (`RapServerConfig.token`). Undefined with `token: false`, or with `authorize` and no token.
   */
  token?: string;
  /** The Fastify app, to inject requests in tests (routes of your own: `options.routes`). */
  app: FastifyInstance;
  /** Stops listening; requests already being handled finish first. */
  close(): Promise<void>;
}

const SAFE_THREAD_ID = /^(?!.*\.\.)[^/\\\0]{1,512}$/;

/**
 * A RAP tool server: serves the manifest of `tools`, acknowledges each invocation at once and runs its handler in the
 * background, then posts what the handler gives (a result, subscription events, an OAuth request, a choice) to the
 * call's callback URL, retrying 5xx and network failures. A handler's `ctx.signal` aborts when the runtime cancels
 * the call or closes its thread.
 *
 * @example
 * ```ts
 * import { createRapToolServer } from 'infinity-temporal/rap';
 *
 * const server = await createRapToolServer({
 *   name: 'ci',
 *   port: 3001,
 *   tools: [
 *     {
 *       name: 'run_build',
 *       description: 'Runs a CI build; the result arrives when it finishes.',
 *       inputSchema: { type: 'object', properties: { ref: { type: 'string' } }, required: ['ref'] },
 *       // may take hours: the thread holds nothing while it waits
 *       handler: async (args, ctx) => `build of ${String(args.ref)}: ${await ci.build(String(args.ref), ctx.signal)}`,
 *     },
 *   ],
 * });
 * // the worker: loadRapToolsets({ servers: [{ url: server.url, token: server.token }], gateway })
 * console.log(server.url);
 * ```
 */
export async function createRapToolServer(options: RapToolServerOptions): Promise<RapToolServer> {
  const host = options.host ?? '127.0.0.1';
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  checkToolServerConfig({ ...options, host });
  const token = toolServerToken(options);
  const allowedCallbacks = originSet(options.callbackOrigins);
  const app = Fastify({ logger: false, ...listenerServerOptions(options.limits) });
  guardListener(app, {
    bindHost: host,
    ...allowedHostsFor(host, options.allowedHosts, publicUrl),
    ...options.limits,
  });
  const guarded = {
    onRequest: rapRouteGuard({
      ...(token !== undefined && { token }),
      ...(options.authorize && { authorize: (req: FastifyRequest) => options.authorize!(req) }),
    }),
  };
  const ajv = new Ajv({ allErrors: true, strict: false });
  const tools = new Map<string, { def: RapToolHandler; validate: ValidateFunction }>();
  for (const t of options.tools) tools.set(t.name, { def: t, validate: ajv.compile(t.inputSchema) });
  const running = new Map<string, { threadId: string; abort: AbortController }>();
  const choices = new Map<string, OpenChoice>();
  /** Where runtimes reach this server: configured, or the listen address (set once it listens, before any request). */
  let base = publicUrl ?? '';
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

  app.get('/.well-known/rap-toolset', guarded, async () => {
    const manifest: RapManifest = {
      name: options.name,
      ...(options.description && { description: options.description }),
      endpoint: `${base}/invoke`,
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

  app.post<{ Body: Record<string, unknown> }>('/invoke', guarded, async (req, reply) => {
    const b = req.body;
    const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
    const id = str(b?.id);
    const groupId = str(b?.group_id);
    const callbackUrl = str(b?.callback_url);
    const operation = typeof b?.operation === 'string' ? b.operation : undefined;
    // Without these there is nobody to answer: refuse now (what Infinity's servers do, 422).
    if (!id || !groupId || !callbackUrl || operation === undefined)
      return reply.code(422).send('missing operation, id, callback_url or group_id');
    // Checked before anything is sent: a callback carries `callbackHeaders` and the tool's output.
    const refusal = callbackUrlRefusal(callbackUrl, allowedCallbacks);
    if (refusal) return reply.code(403).send(refusal);
    const abort = new AbortController();
    running.set(id, { threadId: groupId, abort });
    const choiceResponseUrl = `${base}/user_choice_response`;
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

  app.post<{ Body: { thread_id?: unknown; tool_call_id?: unknown } }>(
    '/cancel_tool_call',
    guarded,
    async (req, reply) => {
      const callId = req.body?.tool_call_id;
      if (typeof callId === 'string') running.get(callId)?.abort.abort(new Error('cancelled by the runtime'));
      return reply.code(200).send('');
    },
  );

  app.post<{ Body: { thread_id?: unknown } }>('/close_thread', guarded, async (req, reply) => {
    const threadId = req.body?.thread_id;
    if (typeof threadId === 'string' && SAFE_THREAD_ID.test(threadId)) {
      for (const r of running.values()) if (r.threadId === threadId) r.abort.abort(new Error('thread closed'));
      await Promise.resolve(options.onCloseThread?.(threadId)).catch(() => undefined);
    }
    return reply.code(200).send('');
  });

  // Answered by the user's client, not the runtime: the choice's key (in its response_url) is the credential.
  app.post<{ Body: { id?: unknown; selected?: unknown }; Querystring: { key?: unknown } }>(
    '/user_choice_response',
    async (req, reply) => {
      const { id, selected } = req.body ?? {};
      const open = choices.get(String(id));
      if (!open) return reply.code(200).send(''); // answered already, or never asked: nothing to do
      const key = req.query.key;
      if (typeof key !== 'string' || !sameSecret(key, open.key))
        return reply.code(403).send({ error: "the answer does not bear the choice's key" });
      if (Number.isInteger(selected)) {
        choices.delete(String(id));
        open.resolve(selected as number);
      }
      return reply.code(200).send('');
    },
  );

  options.routes?.(app);
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('RAP tool server: no TCP address');
  const url = `http://${urlHost(host)}:${address.port}`;
  base ||= url;
  return { url, ...(token !== undefined && { token }), app, close: () => app.close() };
}

/**
 * The guard's `allowedHosts`: on a loopback bind, `publicUrl`'s host joins the given names (a proxy in front keeps its
 * `Host`); beyond loopback the given names alone, so that without them any `Host` is served as before.
 */
function allowedHostsFor(
  host: string,
  given: readonly string[] | undefined,
  publicUrl: string | undefined,
): { allowedHosts?: readonly string[] } {
  if (!isLoopbackHost(host)) return given === undefined ? {} : { allowedHosts: given };
  const names = [...(given ?? []), ...(publicUrl ? [new URL(publicUrl).host] : [])];
  return names.length > 0 ? { allowedHosts: names } : {};
}
