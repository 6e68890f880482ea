/**
 * Hand-made starts (`temporal workflow start --type agentThread --input ...`) with arguments no client sends: each
 * wrong value is left out (src/workflows/tolerant.ts), no workflow task fails, and the thread answers a user text.
 * Before, a non-iterable in the carried state, a queued input without content, a timer of no time or a seed of the
 * wrong shape failed every workflow task of the thread, and an object as tenant failed every slice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ScriptedModel } from '../src/model/scripted';
import { eventually, render, startTestSystem, type TestSystem, uid } from './helpers';

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ model: new ScriptedModel(() => ({ text: 'ok' })) });
});
afterAll(() => sys?.shutdown());

const HOSTILE: [string, unknown][] = [
  ['a string', 'hello'],
  ['an array', [1, 2]],
  ['a number as thread id', { threadId: 5 }],
  ['an unknown kind', { kind: 'alien' }],
  ['options of the wrong types', { options: { maxRunEvents: 'x', dedupWindow: 'y', localSliceBudgetMs: 'z' } }],
  ['metadata that is a string', { metadata: 'x' }],
  ['a tenant that is an object', { tenant: { a: 1 } }],
  ['a seed that is a string', { seed: 'x' }],
  ['a seed of the wrong shape', { seed: { pendingCall: null, prefix: 'x', inbox: 'y', eventTargets: 5 } }],
  ['carried state that is a string', { carried: 'x' }],
  ['carried children that are a number', { carried: { children: 5, subscriptions: [5], processedInputIds: 7 } }],
  ['carried timers of no time', { carried: { timers: [{ callId: 1, wakeAtMs: 'x', text: 2 }] } }],
  ['carried inputs without content', { carried: { inbox: [1, { id: 'x' }], deferred: 'y' } }],
  ['a first input that cannot be a string', { firstInput: { toString: 1 } }],
  ['carried counts that are no numbers', { carried: { length: 'x', slices: 'y', runs: 'z' } }],
  ['a negative carried length', { carried: { length: -3, slices: -1 } }],
  ['a carried pending call of the wrong shape', { carried: { pendingCall: { id: 5 }, closed: 'yes' } }],
];

it.each(HOSTILE)('a start with %s: no task fails and the thread answers', async (_name, args) => {
  const id = uid('hostile-start');
  await sys.temporal.workflow.start('agentThread', { workflowId: id, taskQueue: sys.taskQueue, args: [args] });
  await sys.client.sendUserText(id, 'are you there?');
  const thread = sys.client.thread(id);
  await thread.waitForIdle({ timeoutMs: 30_000 });
  expect(render(await thread.history()).slice(-2)).toEqual(['user: are you there?', 'assistant: ok']);
  const { events } = await sys.temporal.workflow.getHandle(id).fetchHistory();
  expect((events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
});

/**
 * Release 0.10 (decision 76): a cancelled thread asks its children to cancel, at most the 1,000 most recent. Before
 * decision 83 a hand-made start could carry 2,500 children and the bound was what let it close; now carried state is
 * taken only from the thread's own continue-as-new: the hand-made children are refused (counted as a drop), and the
 * cancelled thread asks none of them.
 */
it('a start carrying 2,500 children, cancelled: the carried children are refused, it asks none and ends cancelled', async () => {
  const id = uid('hostile-children');
  const children = Array.from({ length: 2500 }, (_, i) => [`${id}-ghost-${i}`, `call-${i}`]);
  const handle = await sys.temporal.workflow.start('agentThread', {
    workflowId: id,
    taskQueue: sys.taskQueue,
    args: [{ threadId: id, kind: 'root', carried: { children } }],
  });
  await sys.client.thread(id).waitForIdle({ timeoutMs: 30_000 });
  await handle.cancel();
  await eventually(async () => ((await handle.describe()).status.name === 'CANCELLED' ? true : undefined), 60_000);
  const { events } = await handle.fetchHistory();
  const requested = (events ?? []).filter((e) => e.requestCancelExternalWorkflowExecutionInitiatedEventAttributes);
  expect(requested).toHaveLength(0);
  expect((events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
});
