/**
 * Decision 76 on the real dev server: a thread ended by Temporal's own cancel (the UI's or `temporal workflow cancel`)
 * asks the children it spawned to cancel, and they theirs, so a cancelled tree stops. A root with a child that has a
 * child of its own: cancelling the child cancels the grandchild and leaves the root running; cancelling a root takes
 * its whole tree. (A cancelled thread of 0.9, which left its children running, is outside release 0.13's window: 0.10's
 * old branch is gone, decision 85.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import type { ModelRequest } from '../src/model/provider';
import type { ToolContext } from '../src/tools/tool';
import { checkReplay, eventually, recordingTool, startTestSystem, type TestSystem, uid } from './helpers';
import { selfOf, textOf } from './model-requests';

const rootOf = (req: ModelRequest) => /The root thread ID is `([^`]+)`/.exec(req.system)?.[1] ?? '';

/** A root told `spawn` spawns a child that spawns a grandchild; the grandchild waits on `child_wait`. */
function script(req: ModelRequest): ScriptedReply {
  const last = req.messages.at(-1);
  const self = selfOf(req);
  if (last?.role === 'tool_result' && textOf(last).includes('You are now INSIDE the thread')) {
    if (textOf(last).includes('spawn a grandchild'))
      return { toolCall: { name: 'spawn_thread', args: { instructions: 'wait', child_of: [rootOf(req), self] } } };
    return { toolCall: { name: 'child_wait', args: {} } };
  }
  if (last?.role === 'user' && last.text === 'spawn')
    return { toolCall: { name: 'spawn_thread', args: { instructions: 'spawn a grandchild', child_of: [self] } } };
  return { text: `ack ${textOf(last).slice(0, 30)}` };
}

/** A test system on this build and the tree its tests build. */
function withSystem() {
  const ctx = { sys: undefined as unknown as TestSystem, waits: [] as ToolContext[] };
  beforeAll(async () => {
    ctx.sys = await startTestSystem({
      model: new ScriptedModel(script),
      tools: [recordingTool('child_wait', ctx.waits)],
    });
  });
  afterAll(() => ctx.sys?.shutdown());
  const statusOf = async (id: string) => (await ctx.sys.temporal.workflow.getHandle(id).describe()).status.name;
  const cancelled = (id: string) =>
    eventually(async () => ((await statusOf(id)) === 'CANCELLED' ? true : undefined), 30_000, `${id} cancelled`);
  /** A root, its child and the child's child, waiting on the grandchild's call. */
  const tree = async () => {
    const root = uid('tree');
    await ctx.sys.client.thread(root).sendUserText('spawn');
    const grand = await eventually(async () => ctx.waits.find((c) => c.rootThreadId === root));
    const child = (await ctx.sys.store.getThread(grand.threadId))!.parentThreadId!;
    expect([root, grand.threadId]).not.toContain(child);
    return { root, child, grand: grand.threadId };
  };
  const cancel = (id: string) => ctx.sys.temporal.workflow.getHandle(id).cancel();
  return { ctx, statusOf, cancelled, tree, cancel };
}

describe('a cancelled thread on this build', () => {
  const { ctx, statusOf, cancelled, tree, cancel } = withSystem();

  it('takes its children with it and leaves its parent running', async () => {
    const { root, child, grand } = await tree();
    await cancel(child);
    await cancelled(child);
    await cancelled(grand);
    expect(await statusOf(root)).toBe('RUNNING');
    await checkReplay(ctx.sys.client.thread(child), 'cancel-cascade-child');
  });

  it('cancelling a root takes its whole tree', async () => {
    const { root, child, grand } = await tree();
    await cancel(root);
    for (const id of [root, child, grand]) await cancelled(id);
  });
});
