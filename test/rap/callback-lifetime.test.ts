/**
 * Callback URLs live as long as their call or subscription, not as long as a clock says: a subscription keeps its
 * URL for years, and the URL is revoked (410 Gone) once its call is answered, its subscription cancelled or its
 * thread closed — which the gateway learns from the thread itself, so it holds across gateway restarts and key
 * rotation. Real gateway, real worker, real tool server (SDK) on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackStateOf } from '../../src/client/callback-check';
import { firstText } from '../../src/model/projection';
import { ScriptedModel } from '../../src/model/scripted';
import type { CallbackStateCheck } from '../../src/rap/callback-guard';
import { startRapGateway, type RapGateway } from '../../src/rap/gateway';
import { CallbackTokens, newCallbackKey } from '../../src/rap/tokens';
import {
  createRapToolServer,
  RapCallbackError,
  type RapSubscription,
  type RapToolServer,
} from '../../src/rap/tool-server';
import { loadRapToolsets } from '../../src/rap/toolsets';
import { eventually, render, startTestSystem, type TestSystem, uid } from '../helpers';

const DAY = 24 * 3600_000;
const k1 = newCallbackKey();
const k2 = newCallbackKey();
/** The gateway's clock runs ahead by this much (it mints and checks tokens with it). */
let skew = 0;
const ref: { sys?: TestSystem; check?: CallbackStateCheck } = {};
let gateway: RapGateway;
let toolServer: RapToolServer;
let sys: TestSystem;
/** Every invocation the tool server received, with the exact callback URL it was given. */
const invocations: { id: string; group_id: string; operation: string; callback_url: string }[] = [];
/** While set, `/cancel_tool_call` notices are acknowledged and dropped: a notice lost on the way. */
let loseCancelNotices = false;
const subscriptions = new Map<string, { sub: RapSubscription; signal: AbortSignal }>();

const startGateway = (keys: ConstructorParameters<typeof CallbackTokens>[0], port = 0) =>
  startRapGateway({
    tokens: new CallbackTokens(keys),
    port,
    now: () => Date.now() + skew,
    deliver: (m) => ref.sys!.client.deliver(m),
    callbackState: async (threadId, callId) => ref.check?.(threadId, callId),
  });

/** `call <tool> <json>` anywhere in the last user text or tool result (a child's instructions, a parent's message). */
const model = new ScriptedModel((req) => {
  const last = req.messages[req.messages.length - 1]!;
  const text = last.role === 'user' ? last.text : last.role === 'tool_result' ? firstText(last.content) : '';
  const m = /\bcall (\S+) (\{.*\})/.exec(text);
  if (m) return { toolCall: { name: m[1]!, args: JSON.parse(m[2]!) } };
  return {
    text: `${last.role === 'tool_result' && last.name === 'receive_event__injected' ? 'noted' : 'got'}: ${text}`,
  };
});

beforeAll(async () => {
  gateway = await startGateway({ current: 'k1', keys: { k1 } });
  toolServer = await createRapToolServer({
    name: 'lifetime-tools',
    tools: [
      {
        name: 'watch_repo',
        description: 'Subscribes to pushes of a repository.',
        inputSchema: { type: 'object', properties: { repo: { type: 'string' } }, required: ['repo'] },
        handler: async (args, ctx) => {
          subscriptions.set(ctx.toolCallId, {
            sub: await ctx.subscribe(`watching ${String(args.repo)}`),
            signal: ctx.signal,
          });
        },
      },
      {
        name: 'run_job',
        description: 'Runs a job.',
        inputSchema: { type: 'object' },
        handler: (args) => `job ${String(args.name)} done`,
      },
    ],
    routes: (app) =>
      app.addHook('preHandler', async (req, reply) => {
        if (req.url === '/invoke') invocations.push(req.body as (typeof invocations)[number]);
        if (req.url === '/cancel_tool_call' && loseCancelNotices) return reply.code(200).send('');
      }),
  });
  // The worker asks whichever gateway is current for URLs: the last test restarts it on the same port.
  const toolsets = await loadRapToolsets({
    servers: [{ url: toolServer.url, token: toolServer.token! }],
    gateway: { callbackUrl: (t, c) => gateway.callbackUrl(t, c) },
    backoffMs: 20,
  });
  sys = ref.sys = await startTestSystem({ model, tools: toolsets.tools, toolLifecycle: [toolsets] });
  ref.check = callbackStateOf(sys.client.temporal);
}, 60_000);

afterAll(async () => {
  await sys?.shutdown();
  await toolServer?.close();
  await gateway?.close();
});

/**
 * A raw callback. Sent twice on a network failure, as the tool SDK would: after a gateway restart on the same port,
 * fetch may first pick a kept-alive socket to the old gateway (closed under it).
 */
const post = async (url: string, body: unknown, attempt = 1): Promise<{ status: number; body: { error?: string } }> => {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    if (attempt > 1) throw e;
    return post(url, body, attempt + 1);
  }
  return { status: res.status, body: (await res.json()) as { error?: string } };
};
const invocation = (threadId: string, operation: string) =>
  eventually(() => invocations.find((i) => i.group_id === threadId && i.operation === operation));

/** A root thread with an active `watch_repo` subscription. */
async function subscribed(repo: string) {
  const thread = await sys.client.startThread({ threadId: uid('sub') });
  await thread.sendUserText(`call watch_repo {"repo":"${repo}"}`);
  await thread.waitForIdle({ settled: true });
  const inv = await invocation(thread.threadId, 'watch_repo');
  const { sub, signal } = await eventually(() => subscriptions.get(inv.id));
  expect((await thread.status()).subscriptions).toEqual({ [inv.id]: 'watch_repo' });
  return { thread, inv, sub, signal };
}

describe('callback URLs live as long as their call', () => {
  it('delivers events to a subscription long after the old 30-day token lifetime', async () => {
    const { thread, inv, sub } = await subscribed('acme/api');
    skew = 400 * DAY; // the gateway now believes the URL is 400 days old
    try {
      await sub.event('push after 400 days', { associative: true });
      await eventually(
        async () => render(await thread.history()).includes('event #1: push after 400 days') || undefined,
      );
    } finally {
      skew = 0;
    }
    expect(new CallbackTokens({ current: 'k1', keys: { k1 } }).verify(inv.callback_url.split('/').pop()!)).toEqual({
      ok: true,
      claims: { threadId: thread.threadId, callId: inv.id },
    });
    // An operator can still bound a URL's life: its tokens then carry an expiry, checked like any signed claim.
    const tokens = new CallbackTokens({ current: 'k1', keys: { k1 } });
    const bounded = await startRapGateway({
      tokens,
      deliver: async () => ({ delivered: true }),
      tokenTtlMs: DAY,
      now: () => 1_000_000,
    });
    try {
      const token = bounded.callbackUrl('t', 'c').split('/').pop()!;
      expect(tokens.verify(token, 1_000_000)).toEqual({
        ok: true,
        claims: { threadId: 't', callId: 'c', expiresAt: 1_000_000 + DAY },
      });
      expect(tokens.verify(token, 1_000_000 + DAY)).toEqual({ ok: false, reason: 'expired' });
    } finally {
      await bounded.close();
    }
  });

  it('revokes a cancelled subscription: 410, nothing reaches the thread, and the SDK stops even if the cancel notice was lost', async () => {
    const { thread, inv, sub, signal } = await subscribed('acme/web');
    // The call already has its result while the subscription is active: a second one is a conflict, not a revocation.
    expect(
      await post(inv.callback_url, { type: 'tool_result', group_id: thread.threadId, id: inv.id, text: 'again' }),
    ).toMatchObject({ status: 409 });
    loseCancelNotices = true;
    try {
      await thread.sendUserText(`call cancel_subscription {"tool_call_id":"${inv.id}"}`);
      await thread.waitForIdle({ settled: true });
    } finally {
      loseCancelNotices = false;
    }
    const before = await thread.status();
    expect(before.subscriptions).toEqual({});
    expect(signal.aborted).toBe(false); // the tool never heard of the cancellation
    const history = render(await thread.history());

    expect(
      await post(inv.callback_url, {
        type: 'subscription_event',
        group_id: thread.threadId,
        tool_call_id: inv.id,
        text: 'raw push',
        associative: true,
      }),
    ).toEqual({
      status: 410,
      body: { error: 'this callback URL was revoked: its tool call was answered, or its subscription ended' },
    });
    const refused = await sub.event('push after cancel', { associative: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RapCallbackError);
    expect((refused as RapCallbackError).status).toBe(410);
    expect(sub.active).toBe(false);
    expect(signal.aborted).toBe(true); // a handler that polls stops on its signal
    await expect(sub.event('and another')).rejects.toThrow('has ended'); // no more requests at all

    const after = await thread.status();
    expect(render(await thread.history())).toEqual(history);
    expect(after.dropped).toEqual(before.dropped);
    expect(after.historyLength).toBe(before.historyLength);
  });

  it('answers 410 to a second result once the thread has recorded the first', async () => {
    const thread = await sys.client.startThread({ threadId: uid('job') });
    await thread.sendUserText('call run_job {"name":"a"}');
    const done = await thread.waitForIdle({ settled: true });
    expect(render(await thread.history()).slice(-2)).toEqual(['result #1: job a done', 'assistant: got: job a done']);
    const inv = await invocation(thread.threadId, 'run_job');
    expect(
      await post(inv.callback_url, {
        type: 'tool_result',
        group_id: thread.threadId,
        id: inv.id,
        text: 'job a done twice',
      }),
    ).toMatchObject({ status: 410 });
    const after = await thread.status();
    expect([after.historyLength, after.dropped]).toEqual([done.historyLength, done.dropped]);
  });

  it('delivers anyway when the thread cannot answer (no worker): a signal is durable; only a second result is refused', async () => {
    const idle = await startTestSystem({ model, noWorker: true });
    const check = callbackStateOf(idle.client.temporal, { timeoutMs: 200 }); // nobody can answer: no need to wait 5 s
    const g = await startRapGateway({
      tokens: new CallbackTokens({ current: 'k1', keys: { k1 } }),
      deliver: (m) => idle.client.deliver(m),
      callbackState: check,
    });
    try {
      const thread = await idle.client.startThread({ threadId: uid('no-worker') });
      const body = { type: 'tool_result', group_id: thread.threadId, id: 'call-1', text: 'while no worker runs' };
      expect(await post(g.callbackUrl(thread.threadId, 'call-1'), body)).toEqual({
        status: 200,
        body: { ok: true, delivered: true },
      });
      expect(await post(g.callbackUrl(thread.threadId, 'call-1'), body)).toMatchObject({ status: 409 }); // from memory
      const { events } = await thread.workflow.fetchHistory();
      expect(events!.filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(1);
      // A closed execution needs no worker either: the server refuses the query at once.
      await thread.workflow.terminate('the thread is gone');
      expect(await post(g.callbackUrl(thread.threadId, 'call-2'), { ...body, id: 'call-2' })).toMatchObject({
        status: 410,
      });
    } finally {
      await g.close();
      await idle.shutdown();
    }
  });

  it("answers 410 for a closed thread's URLs, its still-active subscription included", async () => {
    const root = await sys.client.startThread({ threadId: uid('parent') });
    await root.sendUserText(
      `call spawn_thread {"instructions":"call watch_repo {\\"repo\\":\\"acme/child\\"}","child_of":["${root.threadId}"]}`,
    );
    const childId = (await eventually(async () => (await root.status()).children[0]))!;
    const child = sys.client.thread(childId);
    const inv = await invocation(childId, 'watch_repo');
    await eventually(async () => (Object.keys((await child.status()).subscriptions).length === 1 ? true : undefined));
    await root.waitForIdle({ settled: true });
    const close = JSON.stringify({ thread_id: childId, message: `call close_thread {"thread_id":"${childId}"}` });
    await root.sendUserText(`call send_message_to_child ${close}`);
    await eventually(async () => ((await child.status()).status === 'closed' ? true : undefined));
    const history = render(await child.history());
    // The closed thread still lists the subscription (the runtime need not cancel it on close); the URL is dead anyway.
    expect(Object.keys((await child.status()).subscriptions)).toEqual([inv.id]);
    expect(
      await post(inv.callback_url, {
        type: 'subscription_event',
        group_id: childId,
        tool_call_id: inv.id,
        text: 'orphan',
        associative: true,
      }),
    ).toEqual({
      status: 410,
      body: { error: 'this callback URL was revoked: its thread is closed' },
    });
    expect(render(await child.history())).toEqual(history);
  });

  it('keeps working across a gateway restart with rotated keys: old URLs deliver, spent ones stay revoked, removed keys stop', async () => {
    const { thread, inv, sub } = await subscribed('acme/rotate');
    const job = await sys.client.startThread({ threadId: uid('job') });
    await job.sendUserText('call run_job {"name":"b"}');
    await job.waitForIdle({ settled: true });
    const spent = await invocation(job.threadId, 'run_job');
    expect([inv.callback_url, spent.callback_url].map((u) => u.split('/').pop()!.split('.')[0])).toEqual(['k1', 'k1']);

    // Restart: same address, new current key, the old one kept. The new gateway remembers nothing of the old one.
    const port = Number(new URL(gateway.url).port);
    await gateway.close();
    gateway = await startGateway({ current: 'k2', keys: { k2, k1 } }, port);
    await sub.event('push after rotation', { associative: true });
    await eventually(async () => render(await thread.history()).includes('event #1: push after rotation') || undefined);
    expect(
      await post(spent.callback_url, {
        type: 'tool_result',
        group_id: job.threadId,
        id: spent.id,
        text: 'replayed after restart',
      }),
    ).toMatchObject({ status: 410 });
    await job.sendUserText('call run_job {"name":"c"}');
    await eventually(async () => (render(await job.history()).includes('result #2: job c done') ? true : undefined));
    const fresh = invocations.filter((i) => i.group_id === job.threadId).at(-1)!;
    expect(fresh.callback_url.split('/').pop()!.startsWith('k2.')).toBe(true);

    // k1 removed: its URLs are refused before anything else (401), the active subscription's included.
    await gateway.close();
    gateway = await startGateway({ current: 'k2', keys: { k2 } }, port);
    expect(
      await post(inv.callback_url, {
        type: 'subscription_event',
        group_id: thread.threadId,
        tool_call_id: inv.id,
        text: 'x',
      }),
    ).toEqual({
      status: 401,
      body: { error: 'callback token refused: unknown_key' },
    });
  });
});
