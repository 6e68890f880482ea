/**
 * A wait that is open when a thread closes itself ends with the thread: `waitForIdle` on a child that reports and
 * closes while the wait is in flight returns the closed status, and the child's workflow completes (it waits for its
 * open handlers before it ends, and an open wait used to hold it, and itself, forever). Real dev server.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedModel, type ScriptedTurn } from '../src/model/scripted';
import type { ModelRequest } from '../src/model/provider';
import { treeScript, treeTools } from './fixtures/tree-script';
import { checkReplay, eventually, startTestSystem, type TestSystem, uid } from './helpers';

const isChild = (req: ModelRequest) => {
  const m = /Your current thread ID is `([^`]+)`\. The root thread ID is `([^`]+)`\./.exec(req.system);
  return m !== null && m[1] !== m[2];
};

// The child's closing turn streams for ~2 s, so a wait can be opened on it while it runs.
const model = new ScriptedModel(async (req) => {
  const turn = (await treeScript(req)) as ScriptedTurn;
  return isChild(req) ? { ...turn, text: 'closing now', chunks: 20, delayMs: 100 } : turn;
});

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model, tools: treeTools() });
});
afterAll(async () => sys?.shutdown());

for (const settled of [false, true]) {
  it(`returns the closed status to a wait (settled: ${settled}) that is open when the child closes`, async () => {
    const root = await sys.client.startThread({ threadId: uid('closing') });
    await root.sendUserText('spawn close:bye');
    const childId = await eventually(async () => (await root.status()).children[0], 30_000, 'the child');
    const child = sys.client.thread(childId);
    await eventually(
      () => sys.seen.some((e) => e.threadId === childId && e.type === 'text_delta'),
      30_000,
      'the child streaming',
    );
    const status = await child.waitForIdle({ settled, timeoutMs: 30_000 });
    expect(status.status).toBe('closed');
    const described = await child.workflow.describe();
    expect(described.status.name).toBe('COMPLETED');
    await checkReplay(child, `wait-at-close-child-${settled ? 'settled' : 'idle'}`);
  });
}
