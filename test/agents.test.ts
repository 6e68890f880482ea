/**
 * Many agents, one fleet (issue 40) on the real dev server, with SQLite and PostgreSQL stores: two agents with their
 * own scripted models, instructions and tools on one worker, threads of both interleaved with default-agent threads;
 * a child of another kind; a definition changed between two slices; unknown agents at start, fork and spawn; a thread
 * whose agent is gone waits with its queue and goes on once moved.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineAgent, type AgentDefinition } from '../src/activities/agents';
import { InvalidInputError } from '../src/inbox/errors';
import type { ModelProvider, ModelRequest } from '../src/model/provider';
import { firstText } from '../src/model/projection';
import { ScriptedModel, type ScriptFn } from '../src/model/scripted';
import { PostgresConversationStore } from '../src/store/postgres';
import type { ConversationStore } from '../src/store/conversation-store';
import { defineTool } from '../src/tools/tool';
import { searchAttributes } from '../src/workflows/definitions';
import { createAgentWorker } from '../src/worker/create-worker';
import { checkReplay, eventually, startTestSystem, type TestSystem, uid } from './helpers';
import { inputSignal, THREAD_WORKFLOW_TYPE } from '../src/workflows/definitions';
import { createTestDatabase } from './postgres';

/** A scripted model under an id of its own (each agent's requests are told apart by the model that got them). */
function scripted(id: string, script: ScriptFn): ScriptedModel & ModelProvider {
  const m = new ScriptedModel(script);
  Object.defineProperty(m, 'id', { value: id });
  return m;
}

const tool = (name: string) =>
  defineTool({
    name,
    description: `the ${name} tool`,
    parameters: { type: 'object' },
    sync: true,
    execute: () => `${name} ran`,
  });

const self = (req: ModelRequest) => /Your current thread ID is `([^`]+)`/.exec(req.system)?.[1] ?? '';
const lastText = (req: ModelRequest) => {
  const m = req.messages[req.messages.length - 1];
  return m?.role === 'user' ? m.text : m?.role === 'tool_result' ? firstText(m.content) : '';
};
const toolNames = (req: ModelRequest) => req.tools.map((t) => t.name);

/** The default agent: echoes. */
const defaultModel = scripted('model-default', (req) => ({ text: `default: ${lastText(req)}` }));
/** triage: echoes under its own name. */
const triageModel = scripted('model-triage', (req) => ({ text: `triage: ${lastText(req)}` }));
/** coder: `spawn <agent>` spawns a child of that agent; a child's report is noted; anything else is echoed. */
const coderModel = scripted('model-coder', (req) => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === 'user') {
    const spawn = /^spawn (\S+)$/.exec(last.text);
    if (spawn)
      return {
        toolCall: {
          name: 'spawn_thread',
          args: { instructions: 'review the change', child_of: [self(req)], agent: spawn[1] },
        },
      };
  }
  if (last.role === 'tool_result' && last.name === 'spawn_thread') return { text: `spawned: ${lastText(req)}` };
  if (last.role === 'tool_result' && last.name === 'receive_event__injected')
    return { text: `noted: ${lastText(req)}` };
  return { text: `coder: ${lastText(req)}` };
});
/** reviewer: reports once, then stays. */
const reviewerModel = scripted('model-reviewer', (req) => {
  const reported = req.messages.some((m) => m.role === 'tool_call' && m.name === 'report_to_parent');
  return reported ? { text: 'reviewed' } : { toolCall: { name: 'report_to_parent', args: { report: 'LGTM' } } };
});

const triage = defineAgent({
  name: 'triage',
  description: 'Sorts incoming tickets',
  instructions: 'You are TRIAGE.',
  model: triageModel,
  tools: [tool('label_ticket')],
});
const coder = defineAgent({
  name: 'coder',
  description: 'Writes code',
  instructions: 'You are CODER.',
  model: coderModel,
  tools: [tool('run_tests')],
  spawns: ['reviewer'],
});
const reviewer = defineAgent({
  name: 'reviewer',
  description: 'Reviews a change and reports what to fix',
  instructions: 'You are REVIEWER.',
  model: reviewerModel,
  tools: [tool('read_diff')],
});

/** An agent whose threads stop at 10 tokens unless given a budget of their own (a turn spends 20). */
const capped = defineAgent({ name: 'capped', model: triageModel, budget: { totalTokens: 10 } });

/** The resolver's own definition, which the test changes between two slices. */
let resolved: AgentDefinition | undefined;
/** While set, the resolver fails for the agent `flaky` (its definitions' source is down). */
let resolverDown = false;
const resolverModel = scripted('model-resolved', (req) => ({ text: `resolved: ${lastText(req)}` }));
const resolvedAs = (instructions: string) =>
  defineAgent({ name: 'planner', instructions, model: resolverModel, tools: [tool('plan')] });

const makers: [string, () => Promise<ConversationStore | undefined>][] = [
  ['SQLite', async () => undefined],
  ['PostgreSQL', async () => new PostgresConversationStore({ connectionString: await createTestDatabase('agents') })],
];

describe.each(makers)('agents on one worker, %s store', (storeName, makeStore) => {
  /** Replays the thread's history on this build (and records it with RECORD_HISTORIES): once, with SQLite. */
  const replayed = async (threadId: string, name: string) => {
    if (storeName === 'SQLite') await checkReplay(sys.client.thread(threadId), name);
  };
  let sys: TestSystem;
  beforeAll(async () => {
    const store = await makeStore();
    sys = await startTestSystem({
      model: defaultModel,
      tools: [tool('default_tool')],
      agents: [triage, coder, reviewer, capped],
      resolveAgent: ({ agent }) => {
        if (agent === 'flaky' && resolverDown)
          throw new Error('definitions database unreachable: postgres://agents:s3cret@db.internal/defs');
        return agent === 'planner' || agent === 'flaky' ? resolved : undefined;
      },
      ...(store && { store }),
    });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('runs each thread with its own agent: instructions, tools and model, recorded with each slice', async () => {
    const t = uid('triage');
    const c = uid('coder');
    const d = uid('default');
    await sys.client.startThread({ threadId: t, agent: 'triage' });
    await sys.client.sendUserText(c, 'one', { agent: 'coder' }); // a text that creates its thread
    await sys.client.startThread({ threadId: d });
    for (const n of ['a', 'b']) {
      await sys.client.sendUserText(t, `${n}`);
      await sys.client.sendUserText(c, `${n}`);
      await sys.client.sendUserText(d, `${n}`);
    }
    for (const id of [t, c, d]) await sys.client.thread(id).waitForIdle();

    const of = (m: ScriptedModel, id: string) => m.requests.filter((r) => self(r) === id);
    // Texts queued together may share a slice: each thread's model saw all of its own.
    const saw = (m: ScriptedModel, id: string) => of(m, id).flatMap((r) => r.messages.filter((x) => x.role === 'user'));
    expect(saw(triageModel, t).map((x) => (x as { text: string }).text)).toEqual(expect.arrayContaining(['a', 'b']));
    expect(saw(coderModel, c).map((x) => (x as { text: string }).text)).toEqual(
      expect.arrayContaining(['one', 'a', 'b']),
    );
    expect(saw(defaultModel, d).map((x) => (x as { text: string }).text)).toEqual(expect.arrayContaining(['a', 'b']));
    // No thread's request reached another agent's model.
    expect(of(defaultModel, t).length + of(coderModel, t).length + of(triageModel, c).length).toBe(0);
    for (const r of of(triageModel, t)) {
      expect(r.system.startsWith('You are TRIAGE.')).toBe(true);
      expect(toolNames(r)).toContain('label_ticket');
      expect(toolNames(r)).not.toContain('run_tests');
      expect(toolNames(r)).not.toContain('default_tool');
    }
    for (const r of of(coderModel, c)) {
      expect(r.system.startsWith('You are CODER.')).toBe(true);
      expect(toolNames(r)).toEqual(expect.arrayContaining(['run_tests', 'spawn_thread']));
      expect(toolNames(r)).not.toContain('label_ticket');
    }
    for (const r of of(defaultModel, d)) {
      expect(r.system).not.toContain('TRIAGE');
      expect(toolNames(r)).toContain('default_tool');
      // The default agent spawns no other kind: `spawn_thread` is the original runtime's, word for word.
      const spawn = r.tools.find((x) => x.name === 'spawn_thread')!;
      expect(Object.keys((spawn.parameters as { properties: object }).properties)).toEqual([
        'instructions',
        'child_of',
      ]);
    }

    const slice = async (id: string, n: number) => (await sys.store.findSlice(id, `${id}/slice-${n}`))?.agent;
    expect(await slice(t, 0)).toEqual({ name: 'triage', model: 'model-triage', hash: triage.hash });
    expect(await slice(c, 0)).toEqual({ name: 'coder', model: 'model-coder', hash: coder.hash });
    expect((await slice(d, 0))?.name).toBe('default');

    expect((await sys.client.thread(t).status()).agent).toBe('triage');
    expect((await sys.client.thread(d).status()).agent).toBeUndefined();
    const described = await sys.temporal.workflow.getHandle(c).describe();
    expect(described.typedSearchAttributes.get(searchAttributes.AgentName)).toBe('coder');
    expect(described.memo?.agent).toBe('coder');
    await replayed(c, 'agents-named-thread');
    const listed = await eventually(async () => {
      const found: string[] = [];
      for await (const s of sys.client.listThreads({ agent: 'triage' })) found.push(s.threadId);
      return found.includes(t) ? found : undefined;
    });
    expect(listed).not.toContain(c);
  });

  it('spawns a child of another agent, which runs its own instructions, tools and model', async () => {
    const c = uid('coder');
    await sys.client.sendUserText(c, 'spawn reviewer', { agent: 'coder' });
    const status = await eventually(async () => {
      const s = await sys.client.thread(c).status();
      return s.children.length === 1 && s.status === 'idle' && s.slices >= 2 ? s : undefined;
    });
    const child = status.children[0]!;
    await sys.client.thread(child).waitForIdle();
    await eventually(async () =>
      coderModel.requests.some((r) => self(r) === c && lastText(r).includes('LGTM')) ? true : undefined,
    );
    // The parent was offered the reviewer, described, in spawn_thread's schema.
    const offered = coderModel.requests.find((r) => self(r) === c)!.tools.find((x) => x.name === 'spawn_thread')!;
    const agentParam = (offered.parameters as { properties: Record<string, { enum?: string[]; description?: string }> })
      .properties.agent!;
    expect(agentParam.enum).toEqual(['reviewer']);
    expect(agentParam.description).toContain('reviewer: Reviews a change and reports what to fix');
    // The child's requests went to the reviewer's model, with its instructions and tools, over the parent's prefix.
    const childRequests = reviewerModel.requests.filter((r) => self(r) === child);
    expect(childRequests.length).toBeGreaterThanOrEqual(1);
    for (const r of childRequests) {
      expect(r.system.startsWith('You are REVIEWER.')).toBe(true);
      expect(toolNames(r)).toContain('read_diff');
      expect(toolNames(r)).not.toContain('run_tests');
      expect(r.messages.some((m) => m.role === 'user' && m.text === 'spawn reviewer')).toBe(true);
    }
    expect(coderModel.requests.some((r) => self(r) === child)).toBe(false);
    expect((await sys.client.thread(child).status()).agent).toBe('reviewer');
    expect((await sys.store.findSlice(child, `${child}/slice-0`))?.agent?.name).toBe('reviewer');
    // The UI's event history says which agent ran each slice (the activity's summary).
    const summaries = ((await sys.client.thread(child).workflow.fetchHistory()).events ?? []).flatMap((e) =>
      e.userMetadata?.summary?.data ? [Buffer.from(e.userMetadata.summary.data).toString()] : [],
    );
    expect(summaries.some((x) => x.includes('slice 1 (reviewer):'))).toBe(true);
    await replayed(c, 'agents-spawn-other-kind');
    await replayed(child, 'agents-child-of-other-kind');
  });

  it('answers a spawn of an agent the parent may not spawn with an error result, starting nothing', async () => {
    const c = uid('coder');
    await sys.client.sendUserText(c, 'spawn triage', { agent: 'coder' });
    const s = await sys.client.thread(c).waitForIdle();
    expect(s.children).toEqual([]);
    const read = coderModel.requests.filter((r) => self(r) === c).map(lastText);
    expect(read).toContain("Error: unknown agent 'triage'. Agents you may spawn: reviewer");
  });

  it('reads a changed definition at the next slice, without a restart', async () => {
    const p = uid('planner');
    resolved = resolvedAs('You are PLANNER v1.');
    const first = resolved.hash;
    await sys.client.sendUserText(p, 'one', { agent: 'planner' });
    await sys.client.thread(p).waitForIdle();
    resolved = resolvedAs('You are PLANNER v2.');
    await sys.client.sendUserText(p, 'two');
    await sys.client.thread(p).waitForIdle();
    const systems = resolverModel.requests.filter((r) => self(r) === p).map((r) => r.system.split('\n')[0]);
    expect(systems).toEqual(['You are PLANNER v1.', 'You are PLANNER v2.']);
    const hashes = [
      (await sys.store.findSlice(p, `${p}/slice-0`))?.agent?.hash,
      (await sys.store.findSlice(p, `${p}/slice-1`))?.agent?.hash,
    ];
    expect(hashes).toEqual([first, resolved.hash]);
    expect(first).not.toBe(resolved.hash);
  });

  it('keeps a thread whose agent no worker defines waiting with its queue, until it is moved', async () => {
    const g = uid('ghost');
    const seen = sys.seen.length;
    await sys.client.sendUserText(g, 'first', { agent: 'ghost' });
    const waiting = await eventually(async () => {
      const s = await sys.client.thread(g).status();
      return s.status === 'agent_unavailable' ? s : undefined;
    });
    expect(waiting.agentUnavailable?.agent).toBe('ghost');
    const details = (
      (await sys.client.thread(g).workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }
    ).currentDetails;
    expect(details).toContain('agent `ghost`');
    expect(details).toContain(`waiting for agent \`ghost\`: no worker defines it`);
    expect(waiting.agentUnavailable?.known).toEqual(expect.arrayContaining(['triage', 'coder', 'default']));
    expect(sys.seen.slice(seen).some((e) => e.threadId === g && e.type === 'agent_unavailable')).toBe(true);
    // waitForIdle answers: the thread waits for its agent, like one over budget.
    expect((await sys.client.thread(g).waitForIdle()).status).toBe('agent_unavailable');
    await sys.client.sendUserText(g, 'second');
    await eventually(async () => {
      const d = await sys.temporal.workflow.getHandle(g).describe();
      return d.typedSearchAttributes.get(searchAttributes.AgentStatus) === 'agent_unavailable' ? true : undefined;
    });
    expect(triageModel.requests.some((r) => self(r) === g)).toBe(false);
    // The second text made the thread check again (a second refused slice), and `AgentStatus` stayed put meanwhile:
    // written once, never back to idle between the checks.
    await eventually(
      async () => ((await sys.client.thread(g).status()).agentUnavailable?.checks ?? 0) >= 2 || undefined,
    );
    const upserted = ((await sys.temporal.workflow.getHandle(g).fetchHistory()).events ?? []).flatMap((e) => {
      const field = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.AgentStatus;
      return field?.data ? [JSON.parse(Buffer.from(field.data).toString()) as string] : [];
    });
    expect(upserted).toEqual(['agent_unavailable']);

    await sys.client.setAgent(g, 'triage');
    const done = await sys.client.thread(g).waitForIdle();
    expect(done.status).toBe('idle');
    expect(done.agent).toBe('triage');
    const history = await sys.client.thread(g).history();
    const texts = history.filter((i) => i.kind === 'user').map((i) => (i as { text: string }).text);
    expect(texts.filter((x) => x === 'first')).toHaveLength(1);
    expect(texts.filter((x) => x === 'second')).toHaveLength(1);
    expect(
      (await sys.temporal.workflow.getHandle(g).describe()).typedSearchAttributes.get(searchAttributes.AgentName),
    ).toBe('triage');
    await replayed(g, 'agents-missing-then-moved');
  });

  it('waits, keeping its inputs, while the resolver fails, and goes on at the next input once it answers', async () => {
    const f = uid('flaky');
    resolved = resolvedAs('You are PLANNER, resolved.');
    resolverDown = true;
    await sys.client.sendUserText(f, 'first', { agent: 'flaky' });
    const waiting = await eventually(async () => {
      const s = await sys.client.thread(f).status();
      return s.status === 'agent_unavailable' ? s : undefined;
    });
    expect(waiting.agentUnavailable?.reason).toBe(
      'resolveAgent failed: definitions database unreachable: postgres://agents:***@db.internal/defs',
    );
    expect(waiting.setAside).toBeUndefined();
    resolverDown = false;
    await sys.client.sendUserText(f, 'second');
    const done = await eventually(async () => {
      const s = await sys.client.thread(f).status();
      return s.status === 'idle' && s.queued === 0 && s.slices >= 2 ? s : undefined;
    });
    expect(done.agentUnavailable).toBeUndefined();
    const texts = (await sys.client.thread(f).history())
      .filter((i) => i.kind === 'user')
      .map((i) => (i as { text: string }).text);
    expect(texts).toEqual(['first', 'second']);
  });

  it('drops a hand-made set_agent or start agent that names no valid agent, and runs on', async () => {
    const t = uid('hostile');
    await sys.client.sendUserText(t, 'hi', { agent: 'triage' });
    await sys.client.thread(t).waitForIdle();
    const handle = sys.temporal.workflow.getHandle(t);
    await handle.signal(inputSignal, {
      id: 'bad-set',
      threadId: t,
      content: { type: 'text', text: '' },
      synthetic: { type: 'set_agent', agent: '../../etc' },
    });
    await sys.client.sendUserText(t, 'still there?');
    const s = await sys.client.thread(t).waitForIdle();
    expect(s.agent).toBe('triage');
    expect(s.dropped.malformed).toBe(1);
    // A raw start whose agent is no name: left out (the default agent runs), counted as a malformed drop.
    const raw = uid('raw');
    await sys.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      workflowId: raw,
      taskQueue: sys.taskQueue,
      args: [{ threadId: raw, kind: 'root', agent: { evil: true } }],
    });
    await sys.client.sendUserText(raw, 'hello');
    const r = await sys.client.thread(raw).waitForIdle();
    expect(r.agent).toBeUndefined();
    expect(r.dropped.malformed).toBe(1);
    expect(defaultModel.requests.some((q) => self(q) === raw)).toBe(true);
    await replayed(t, 'agents-hostile-set-agent');
  });

  it("gives a thread without a budget of its own its agent's default budget", async () => {
    const t = uid('capped');
    await sys.client.sendUserText(t, 'one', { agent: 'capped' });
    expect((await sys.client.thread(t).waitForIdle()).status).toBe('idle');
    await sys.client.sendUserText(t, 'two');
    const over = await sys.client.thread(t).waitForIdle();
    expect(over.status).toBe('over_budget');
    expect(over.overBudget).toMatchObject({ scope: 'thread', key: t, field: 'totalTokens', limit: 10 });
    // A budget of its own replaces the agent's default.
    await sys.client.setBudget({ thread: t }, { totalTokens: 1000 });
    const done = await eventually(async () => {
      const s = await sys.client.thread(t).status();
      return s.status === 'idle' && s.slices === 2 ? s : undefined;
    });
    expect(done.overBudget).toBeUndefined();
  });

  it('forks keep the source agent unless told otherwise', async () => {
    const t = uid('triage');
    await sys.client.sendUserText(t, 'hello', { agent: 'triage' });
    await sys.client.thread(t).waitForIdle();
    const same = await sys.client.forkThread(t, { at: 'now', input: 'again' });
    const other = await sys.client.forkThread(t, { at: 'now', input: 'and you?', agent: 'coder' });
    expect((await same.waitForIdle()).agent).toBe('triage');
    expect((await other.waitForIdle()).agent).toBe('coder');
    const coderSaw = coderModel.requests.find((r) => self(r) === other.threadId)!;
    expect(coderSaw.system.startsWith('You are CODER.')).toBe(true);
    expect(coderSaw.messages.some((m) => m.role === 'user' && m.text === 'hello')).toBe(true);
  });
});

describe('agent names a client refuses', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ model: defaultModel, agents: [triage], clientAgents: ['default', 'triage'] });
  });
  afterAll(async () => {
    await sys?.shutdown();
  });

  it('refuses an unknown or malformed agent at start, send, fork and setAgent, starting nothing', async () => {
    const id = uid('refused');
    await expect(sys.client.startThread({ threadId: id, agent: 'nope' })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.sendUserText(id, 'hi', { agent: 'no pe' })).rejects.toThrow(InvalidInputError);
    await expect(sys.temporal.workflow.getHandle(id).describe()).rejects.toThrow();
    const t = uid('triage');
    await sys.client.sendUserText(t, 'hi', { agent: 'triage' });
    await sys.client.thread(t).waitForIdle();
    await expect(sys.client.forkThread(t, { at: 'now', agent: 'nope' })).rejects.toThrow(InvalidInputError);
    await expect(sys.client.setAgent(t, 'nope')).rejects.toThrow(/unknown agent 'nope'/);
    expect((await sys.client.thread(t).status()).agent).toBe('triage');
  });
});

describe('a worker of agents alone', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    // No `model`: threads that name no agent run `defaultAgent`.
    sys = await startTestSystem({ model: defaultModel, noWorker: true });
    const worker = await createAgentWorker({
      connection: sys.connection,
      taskQueue: sys.taskQueue,
      store: sys.store,
      agents: [triage, coder],
      defaultAgent: 'coder',
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    void worker.run();
    stopWorker = () => worker.shutdown();
  });
  let stopWorker: () => Promise<void> = async () => {};
  afterAll(async () => {
    await stopWorker();
    await sys?.shutdown();
  });

  it('runs threads that name none on defaultAgent, recorded as the agent that ran', async () => {
    const d = uid('noname');
    await sys.client.sendUserText(d, 'hi');
    await sys.client.thread(d).waitForIdle();
    const r = coderModel.requests.find((q) => self(q) === d)!;
    expect(r.system.startsWith('You are CODER.')).toBe(true);
    expect((await sys.store.findSlice(d, `${d}/slice-0`))?.agent).toEqual({
      name: 'coder',
      model: 'model-coder',
      hash: coder.hash,
    });
  });
});
