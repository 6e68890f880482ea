/**
 * The webhook example (examples/rap-webhook-server.ts) as a tool server for a real thread: the agent subscribes, two
 * webhook posts arrive in its history as events, and cancel_subscription tells the server to stop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookToolServer } from '../../examples/rap-webhook-server';
import type { RapToolServer } from '../../src/rap/tool-server';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import { loadRapToolsets } from '../../src/rap/toolsets';
import { ScriptedModel } from '../../src/model/scripted';
import { firstText } from '../../src/model/projection';
import { eventually, render, startTestSystem, uid, type TestSystem } from '../helpers';

let server: RapToolServer;
let gateway: RapGateway;
let sys: TestSystem;

beforeAll(async () => {
  server = await startWebhookToolServer();
  const ref: { sys?: TestSystem } = {};
  gateway = await startRapGateway({
    tokens: new CallbackTokens({ current: 'a', keys: { a: newCallbackKey() } }),
    deliver: (m) => ref.sys!.client.deliver(m),
  });
  const toolsets = await loadRapToolsets({ servers: [{ url: server.url, token: server.token! }], gateway });
  // Subscribe when asked; cancel when told; acknowledge events.
  const model = new ScriptedModel((req) => {
    const last = req.messages[req.messages.length - 1]!;
    if (last.role === 'user' && last.text === 'watch deploys')
      return { toolCall: { name: 'watch_webhook', args: { channel: 'deploys' } } };
    if (last.role === 'user' && last.text === 'stop') {
      const watch = req.messages.find((m) => m.role === 'tool_call' && m.name === 'watch_webhook') as { id: string };
      return { toolCall: { name: 'cancel_subscription', args: { tool_call_id: watch.id } } };
    }
    return { text: `seen: ${last.role === 'tool_result' ? firstText(last.content) : ''}` };
  });
  sys = ref.sys = await startTestSystem({ model, tools: toolsets.tools, toolLifecycle: [toolsets] });
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await gateway?.close();
  await server?.close();
});

const post = async (channel: string, body: unknown) =>
  (await (
    await fetch(`${server.url}/webhooks/${channel}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  ).json()) as { delivered: number };

describe('webhook subscription example', () => {
  it('turns webhook posts into events of the subscribed thread until the subscription is cancelled', async () => {
    const thread = await sys.client.startThread({ threadId: uid('hooks') });
    await thread.sendUserText('watch deploys');
    await thread.waitForIdle({ settled: true });
    expect(await post('deploys', { service: 'api', version: 7 })).toEqual({ delivered: 1 });
    expect(await post('other', { ignored: true })).toEqual({ delivered: 0 });
    expect(await post('deploys', { service: 'web', version: 3 })).toEqual({ delivered: 1 });
    await eventually(
      async () => (await thread.history()).filter((i) => i.kind === 'subscription_event').length === 2 || undefined,
    );
    await thread.sendUserText('stop');
    await thread.waitForIdle({ settled: true });
    await eventually(async () => ((await post('deploys', { late: true })).delivered === 0 ? true : undefined));
    const lines = render(await thread.history());
    expect(lines.filter((l) => l.startsWith('event'))).toEqual([
      'event #1: {"service":"api","version":7}',
      'event #1: {"service":"web","version":3}',
    ]);
    expect(lines).toContain(
      "result #2: Subscription '" +
        (await thread.history()).find((i) => i.kind === 'tool_call')!.id +
        "' cancelled successfully.",
    );
  });
});
