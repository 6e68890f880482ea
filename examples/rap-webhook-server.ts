/**
 * A RAP tool server with a webhook-driven subscription, in a few lines of the tool-server SDK.
 *
 *   npx tsx examples/rap-webhook-server.ts            # prints {"port":N} first (the embedded-boot contract)
 *   npx infinity-temporal dev --rap http://127.0.0.1:N
 *   npx infinity-temporal send demo 'call watch_webhook {"channel":"deploys"}'   (with a model that calls it)
 *   curl -X POST http://127.0.0.1:N/webhooks/deploys -H 'content-type: application/json' -d '{"service":"api"}'
 *
 * An agent calls `watch_webhook`; every JSON body POSTed to `/webhooks/<channel>` then reaches its thread as a
 * subscription event, until the agent cancels the subscription or its thread closes.
 */
import { createRapToolServer, type RapSubscription, type RapToolServer } from '../src/rap';

/**
 * The server on `port`. Its RAP routes want a random token by default (`server.token`: give it to the runtime as
 * `RapServerConfig.token`); `token: false` opts out, for a runtime that sends none.
 */
export async function startWebhookToolServer(port = 0, token?: string | false): Promise<RapToolServer> {
  const watchers = new Map<string, Set<RapSubscription>>();
  return createRapToolServer({
    name: 'webhooks',
    description: 'Events posted to webhook channels',
    port,
    ...(token !== undefined && { token }),
    tools: [
      {
        name: 'watch_webhook',
        description: 'Subscribe to the JSON events posted to a webhook channel. Events arrive later, one by one.',
        inputSchema: {
          type: 'object',
          properties: { channel: { type: 'string', pattern: '^[a-z0-9-]+$' } },
          required: ['channel'],
          additionalProperties: false,
        },
        annotations: { longRunning: true },
        handler: async (args, ctx) => {
          const channel = String(args.channel);
          const sub = await ctx.subscribe(
            `Subscribed to webhook channel '${channel}'. Each event will arrive as it is posted.`,
          );
          const set = watchers.get(channel) ?? new Set();
          watchers.set(channel, set.add(sub));
          // Cancellation (cancel_subscription, an interruption) or the thread closing ends it.
          ctx.signal.addEventListener('abort', () => set.delete(sub), { once: true });
        },
      },
    ],
    routes(app) {
      app.post<{ Params: { channel: string }; Body: unknown }>('/webhooks/:channel', async (req) => {
        const subs = [...(watchers.get(req.params.channel) ?? [])].filter((s) => s.active);
        await Promise.all(subs.map((s) => s.event(JSON.stringify(req.body), { associative: true })));
        return { delivered: subs.length };
      });
    },
  });
}

if (require.main === module) {
  // `infinity-temporal dev --rap <url>` sends no token to a tool server, so this demo opts out of its default one: any
  // process on this machine may call it while it runs. A runtime that sends one gets `server.token` instead.
  void startWebhookToolServer(Number(process.env.PORT ?? 0), false).then((server) => {
    console.log(JSON.stringify({ port: Number(new URL(server.url).port) }));
    process.once('SIGINT', () => void server.close().then(() => process.exit(0)));
  });
}
