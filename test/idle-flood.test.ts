/**
 * An idle thread's history stays bounded under signals that make no slice (0.13). Before, only a slice's end checked
 * whether the run was due to continue as new, so an idle thread fed signals it dropped — malformed ones from anyone
 * who can signal the namespace, or duplicates from a tool retrying — grew one run's history toward the server's limit,
 * where Temporal terminates the run. On the suite's dev server, with runs bounded to 40 events: the flood moves the
 * thread to new runs, every dropped signal is counted once, and the thread answers its next text with its history
 * whole. Each first run replays (and is recorded for the replay gate). And a run with nothing arriving stays put, even
 * with a bound below a run's first events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../src/client/agent-client';
import { ScriptedModel } from '../src/model/scripted';
import { checkReplay, eventually, startTestSystem, type TestSystem, uid } from './helpers';

const FLOOD = 60;
let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({
    model: new ScriptedModel((req) => ({ text: `answered ${req.messages.length}` })),
    threadOptions: { maxRunEvents: 40 },
  });
});
afterAll(() => sys?.shutdown());

const replies = async (thread: Awaited<ReturnType<TestSystem['client']['startThread']>>) =>
  (await thread.history()).filter((h) => h.kind === 'assistant').length;

describe('an idle thread flooded with signals it drops', () => {
  it('continues as new on malformed signals, counting each once, and answers its next text', async () => {
    const thread = await sys.client.startThread({ threadId: uid('flood-malformed') });
    await thread.sendUserText('hello');
    await thread.waitForIdle({ settled: true });
    const first = await thread.workflow.describe();
    const raw = sys.temporal.workflow.getHandle(thread.threadId);
    for (let i = 0; i < FLOOD; i++) await raw.signal('input', { not: 'an input', n: i });
    const moved = await eventually(
      async () => {
        const s = await thread.status();
        return (s.dropped.malformed ?? 0) === FLOOD && s.runs > 1 ? s : undefined;
      },
      30_000,
      'every malformed signal counted, in a later run',
    );
    expect(moved.runs).toBeGreaterThan(1);
    // No run grew much past its bound: each continued as new once it was long.
    const now = await thread.workflow.describe();
    expect(now.runId).not.toBe(first.runId);
    expect(now.historyLength).toBeLessThan(60);
    await thread.sendUserText('still there?');
    await thread.waitForIdle({ settled: true });
    expect(await replies(thread)).toBe(2);
    // The run that continued as new on the flood replays.
    const run = { threadId: thread.threadId, workflow: sys.temporal.workflow.getHandle(thread.threadId, first.runId) };
    await checkReplay(run, 'idle-flood-malformed', undefined, first.runId);
  });

  it('continues as new on a flood of duplicates that no slice takes', async () => {
    const thread = await sys.client.startThread({ threadId: uid('flood-duplicates') });
    await thread.sendUserText('once', 'the-one-id');
    await thread.waitForIdle({ settled: true });
    const first = await thread.workflow.describe();
    for (let i = 0; i < FLOOD; i++) await thread.sendUserText('once', 'the-one-id');
    const moved = await eventually(
      async () => {
        const s = await thread.status();
        return (s.dropped.duplicate ?? 0) === FLOOD && s.runs > 1 ? s : undefined;
      },
      30_000,
      'every duplicate counted, in a later run',
    );
    expect(moved.runs).toBeGreaterThan(1);
    expect((await thread.workflow.describe()).historyLength).toBeLessThan(60);
    expect(await replies(thread)).toBe(1);
    // The run that continued as new on the flood replays.
    const run = { threadId: thread.threadId, workflow: sys.temporal.workflow.getHandle(thread.threadId, first.runId) };
    await checkReplay(run, 'idle-flood-duplicates', undefined, first.runId);
  });

  it("does not continue as new while nothing arrives, even with a run bound below a run's start", async () => {
    const client = new AgentClient({
      client: sys.temporal,
      taskQueue: sys.taskQueue,
      store: sys.store,
      threadOptions: { maxRunEvents: 1 },
    });
    const thread = await client.startThread({ threadId: uid('quiet') });
    await thread.sendUserText('hello');
    await thread.waitForIdle({ settled: true });
    const before = await thread.workflow.describe();
    await new Promise((r) => setTimeout(r, 2_000));
    const after = await thread.workflow.describe();
    // Idle, it stays on its run: the bound counts only what arrived since the run's start or last slice.
    expect(after.runId, 'no run started while idle').toBe(before.runId);
    expect(after.status.name).toBe('RUNNING');
  });
});
