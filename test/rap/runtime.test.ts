/**
 * RAP end to end on the dev server: an agent calls a tool server made with the SDK; results, subscription events,
 * OAuth and choices come back through the callback gateway into the thread's input queue, while no activity runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RapSubscription } from '../../src/rap/tool-server';
import { eventually, render, uid } from '../helpers';
import { type RapSystem, startRapSystem } from './fixture';

let rap: RapSystem;
let releaseBuild: ((text: string) => void) | undefined;
const subscriptions: RapSubscription[] = [];
const cancelled: string[] = [];
const users: (string | undefined)[] = [];
const closed: string[] = [];

beforeAll(async () => {
  rap = await startRapSystem([
    {
      name: 'run_build',
      description: 'Runs a CI build; the result arrives when it finishes.',
      inputSchema: {
        type: 'object',
        properties: { ref: { type: 'string' } },
        required: ['ref'],
        additionalProperties: false,
      },
      handler: async (args, ctx) => {
        users.push(ctx.userId);
        const text = await new Promise<string>((resolve) => {
          releaseBuild = resolve;
          ctx.signal.addEventListener('abort', () => {
            cancelled.push(ctx.toolCallId);
            resolve('aborted');
          });
        });
        return {
          text: `build of ${String(args.ref)}: ${text}`,
          displayAs: [{ type: 'text', content: 'build finished' }],
        };
      },
    },
    {
      name: 'watch_repo',
      description: 'Subscribes to pushes of a repository.',
      inputSchema: { type: 'object', properties: { repo: { type: 'string' } }, required: ['repo'] },
      handler: async (args, ctx) => {
        subscriptions.push(await ctx.subscribe(`watching ${String(args.repo)}`));
      },
    },
    {
      name: 'deploy',
      description: 'Deploys after the user confirms.',
      inputSchema: { type: 'object', properties: {} },
      handler: async (_args, ctx) => {
        const i = await ctx.choose('Deploy to production?', ['Yes', 'Yes, and remember', 'No'], 2);
        return i === 2 ? 'Error: the user declined the deployment' : `deployed (choice ${i})`;
      },
    },
    {
      name: 'list_issues',
      description: 'Lists GitHub issues; needs authorization first.',
      inputSchema: { type: 'object', properties: {} },
      handler: async (_args, ctx) => {
        await ctx.oauth('https://github.example/login/oauth/authorize?state=abc');
        await new Promise((r) => setTimeout(r, 300)); // the user authorizes; the tool retries by itself
        return '3 open issues';
      },
    },
  ]);
  void closed;
}, 60_000);

afterAll(async () => {
  await rap?.close();
});

describe('RAP tools in a thread', () => {
  it('delivers a result that arrives seconds later while no activity is open for the call', async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap') });
    await thread.sendUserText('call run_build {"ref":"main"}');
    const waiting = await thread.waitForIdle();
    expect(waiting.pendingCall).toMatchObject({ name: 'run_build' });
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      const { raw } = await thread.workflow.describe();
      expect(raw.pendingActivities ?? []).toHaveLength(0); // the thread holds no activity while the tool works
    }
    releaseBuild!('green');
    await thread.waitForIdle({ settled: true });
    const history = await thread.history();
    expect(render(history)).toEqual([
      'user: call run_build {"ref":"main"}',
      'call #1 run_build {"ref":"main"}',
      'result #1: build of main: green',
      'assistant: got: build of main: green',
    ]);
    expect(history[2]).toMatchObject({ displayAs: [{ type: 'text', content: 'build finished' }] });
  }, 60_000);

  it('streams subscription events into the thread, inline and as child threads, until the final one', async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap-sub') });
    await thread.sendUserText('call watch_repo {"repo":"acme/api"}');
    await thread.waitForIdle({ settled: true });
    const sub = await eventually(() => subscriptions.at(-1));
    expect(Object.values((await thread.status()).subscriptions)).toEqual(['watch_repo']);
    await sub.event('push 1', { associative: true });
    await sub.event('push 1', { associative: true }); // identical events are distinct events
    await eventually(
      async () => (await thread.history()).filter((i) => i.kind === 'subscription_event').length === 2 || undefined,
    );
    await sub.event('push 2'); // threaded: a child thread handles it
    await eventually(async () => ((await thread.status()).children.length === 1 ? true : undefined));
    await sub.event('last push', { associative: true, final: true });
    await eventually(async () => (Object.keys((await thread.status()).subscriptions).length === 0 ? true : undefined));
    await expect(sub.event('after the end')).rejects.toThrow('has ended');
    await thread.waitForIdle();
    const events = render(await thread.history()).filter((l) => l.startsWith('event'));
    expect(events).toEqual(['event #1: push 1', 'event #1: push 1', 'event #1: last push']);
  });

  it('shows a user choice in the thread status, posts the answer to the tool, and clears it with the result', async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap-choice') });
    await thread.sendUserText('call deploy {}');
    const prompt = await eventually(async () => (await thread.status()).prompts[0]);
    expect(prompt).toMatchObject({
      kind: 'user_choice',
      prompt: 'Deploy to production?',
      choices: ['Yes', 'Yes, and remember', 'No'],
      default: 2,
    });
    expect(rap.sys.seen).toContainEqual(expect.objectContaining({ type: 'prompt', threadId: thread.threadId }));
    // Dismissed without a choice: the tool gets the default.
    expect(await thread.answerChoice((prompt as { id: string }).id)).toBe(2);
    const done = await thread.waitForIdle({ settled: true });
    expect(done.prompts).toEqual([]);
    expect(render(await thread.history()).at(-2)).toBe('result #1: Error: the user declined the deployment');
  });

  it('surfaces an OAuth link while the call stays pending, then takes the eventual result', async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap-oauth') });
    await thread.sendUserText('call list_issues {}');
    const prompt = await eventually(async () => (await thread.status()).prompts[0]);
    expect(prompt).toMatchObject({ kind: 'oauth', authUrl: 'https://github.example/login/oauth/authorize?state=abc' });
    await thread.waitForIdle({ settled: true });
    expect(render(await thread.history()).slice(-2)).toEqual([
      'result #1: 3 open issues',
      'assistant: got: 3 open issues',
    ]);
    expect((await thread.status()).prompts).toEqual([]);
  });

  it("passes the root metadata's user_id to the tool", async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap-user'), metadata: { user_id: 'alice' } });
    await thread.sendUserText('call run_build {"ref":"feature"}');
    await thread.waitForIdle();
    await eventually(() => (users.includes('alice') ? true : undefined));
    releaseBuild!('green');
    await thread.waitForIdle({ settled: true });
  });

  it('tells the tool server when a pending call is interrupted', async () => {
    const thread = await rap.sys.client.startThread({ threadId: uid('rap-int') });
    await thread.sendUserText('call run_build {"ref":"dev"}');
    await thread.waitForIdle();
    const callId = (await thread.status()).pendingCall!.id;
    await thread.sendUserText('never mind');
    await eventually(() => cancelled.includes(callId) || undefined);
    await thread.waitForIdle({ settled: true });
    const lines = render(await thread.history());
    expect(lines).toContain('result #1: Tool call interrupted by user');
    // The tool's late result ("aborted") is refused by the gateway or dropped by the thread: never in history.
    expect(lines.filter((l) => l.includes('aborted'))).toEqual([]);
  });
});
