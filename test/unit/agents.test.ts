/** Agent definitions, the catalog, spawn_thread's agent enum and the set_agent input's checks (issue 40). */
import { describe, expect, it } from 'vitest';
import { agentCatalog, defineAgent, definitionHash } from '../../src/activities/agents';
import { toolSpecs } from '../../src/activities/tool-calls';
import { agentName, agentNameProblem, agentRecheckMs } from '../../src/core/agents';
import { runBuiltinTool } from '../../src/core/builtins';
import { THREAD_TOOLS } from '../../src/core/builtins/threads';
import { validateInputMessage } from '../../src/core/validate';
import { ScriptedModel } from '../../src/model/scripted';
import { defineTool } from '../../src/tools/tool';

const model = new ScriptedModel(() => ({ text: 'ok' }));
const tool = (name: string) =>
  defineTool({ name, description: name, parameters: { type: 'object' }, sync: true, execute: () => 'x' });

describe('defineAgent', () => {
  it('checks a definition when it is made', () => {
    expect(() => defineAgent({ name: 'a b', model })).toThrow(/agent name/);
    expect(() => defineAgent({ name: '', model })).toThrow(TypeError);
    expect(() => defineAgent({ name: 'x', model: [] })).toThrow(/model is required/);
    expect(() => defineAgent({ name: 'x', model, tools: [tool('spawn_thread')] })).toThrow(/reserved/);
    expect(() => defineAgent({ name: 'x', model, limits: { rpm: -1 } })).toThrow(TypeError);
    expect(() => defineAgent({ name: 'x', model, spawns: ['no good'] })).toThrow(/spawns/);
    expect(() => defineAgent({ name: 'x', model: 'nonsense:thing' })).toThrow();
  });

  it('takes a provider object with a field named model as a model, and routes as entries', () => {
    const withField = Object.assign(new ScriptedModel(() => ({ text: 'y' })), { model: 'inner' });
    const a = defineAgent({ name: 'a', model: [withField, { model, limits: { rpm: 10 } }] });
    expect(a.models.map((m) => m.model)).toEqual([withField, model]);
    expect(a.models[1]!.limits).toEqual({ rpm: 10 });
  });

  it('hashes what shapes a request: instructions, tool specs, model ids', () => {
    const base = defineAgent({ name: 'a', model, instructions: 'one', tools: [tool('t')] });
    expect(base.hash).toMatch(/^[0-9a-f]{12}$/);
    expect(defineAgent({ name: 'b', model, instructions: 'one', tools: [tool('t')] }).hash).toBe(base.hash);
    expect(defineAgent({ name: 'a', model, instructions: 'two', tools: [tool('t')] }).hash).not.toBe(base.hash);
    expect(defineAgent({ name: 'a', model, instructions: 'one', tools: [tool('u')] }).hash).not.toBe(base.hash);
    expect(definitionHash('one', [tool('t')], ['other'])).not.toBe(base.hash);
    // An agent never lists itself among those it spawns.
    expect(defineAgent({ name: 'a', model, spawns: ['a', 'b', 'b'] }).spawns).toEqual(['b']);
  });
});

describe('agentCatalog', () => {
  const a = defineAgent({ name: 'a', description: 'the a', model });
  const b = defineAgent({ name: 'b', model });
  it('resolves the resolver first, then agents, then the fallback as default', async () => {
    const r = defineAgent({ name: 'a', instructions: 'resolved', model });
    const c = agentCatalog({
      agents: [a, b],
      fallback: 'b',
      resolveAgent: ({ agent }) => (agent === 'a' ? r : undefined),
    });
    expect(await c.resolve({ threadId: 't', agent: 'a' })).toBe(r);
    expect(await c.resolve({ threadId: 't', agent: 'b' })).toBe(b);
    expect(await c.resolve({ threadId: 't', agent: 'default' })).toBe(b);
    expect(await c.resolve({ threadId: 't', agent: 'ghost' })).toBeUndefined();
    expect(c.names).toEqual(['a', 'b', 'default']);
  });
  it('refuses duplicates, a fallback that names no agent, and a resolver answer not made by defineAgent', async () => {
    expect(() => agentCatalog({ agents: [a, a] })).toThrow(/two agents/);
    expect(() => agentCatalog({ agents: [a], fallback: 'zz' })).toThrow(/defaultAgent/);
    const bad = agentCatalog({ resolveAgent: () => ({ name: 'x' }) as never });
    await expect(bad.resolve({ threadId: 't', agent: 'x' })).rejects.toThrow(/defineAgent/);
  });
  it('lists what spawn_thread offers: the spawnable agents it can resolve, described', async () => {
    const parent = defineAgent({ name: 'p', model, spawns: ['a', 'b', 'missing'] });
    const c = agentCatalog({ agents: [a, b, parent] });
    expect(await c.spawnable(parent)).toEqual([
      { name: 'a', description: 'the a' },
      { name: 'b', description: 'the b agent' },
    ]);
  });
});

describe("spawn_thread's agent", () => {
  const ctx = {
    threadId: 'r',
    kind: 'root' as const,
    stack: ['r'],
    subscriptions: new Set<string>(),
    parentOf: async () => null,
    now: () => 0,
  };
  it('stays the original runtime tool where no other agent may be spawned', async () => {
    const spec = toolSpecs(new Map(), true).find((t) => t.name === 'spawn_thread')!;
    expect(spec.parameters).toEqual(THREAD_TOOLS[0]!.parameters);
    // An `agent` argument there is ignored, as any argument the schema does not name.
    expect(await runBuiltinTool('spawn_thread', { instructions: 'x', child_of: ['r'], agent: 'zz' }, 'c', ctx)).toEqual(
      {
        action: { type: 'spawn', callId: 'c', instructions: 'x' },
      },
    );
  });
  it('offers an enum of the spawnable agents and refuses any other with a result the model reads', async () => {
    const spawnable = [{ name: 'reviewer', description: 'Reviews' }];
    const spec = toolSpecs(new Map(), true, spawnable).find((t) => t.name === 'spawn_thread')!;
    const props = (spec.parameters as { properties: Record<string, { enum?: string[] }>; required: string[] })
      .properties;
    expect(props.agent!.enum).toEqual(['reviewer']);
    expect((spec.parameters as { required: string[] }).required).toEqual(['instructions', 'child_of']);
    const c = { ...ctx, spawnable };
    expect(
      await runBuiltinTool('spawn_thread', { instructions: 'x', child_of: ['r'], agent: 'reviewer' }, 'c', c),
    ).toEqual({
      action: { type: 'spawn', callId: 'c', instructions: 'x', agent: 'reviewer' },
    });
    expect(await runBuiltinTool('spawn_thread', { instructions: 'x', child_of: ['r'], agent: 7 }, 'c', c)).toEqual({
      result: "Error: unknown agent '7'. Agents you may spawn: reviewer",
    });
  });
});

describe('agent names and the set_agent input', () => {
  it('takes slugs only', () => {
    expect(agentNameProblem('coder')).toBeUndefined();
    expect(agentNameProblem('a.b-c_9')).toBeUndefined();
    for (const bad of ['', '-x', 'a b', 'x'.repeat(65), 'é', 42, null]) expect(agentNameProblem(bad)).toBeDefined();
    expect(agentName('../etc')).toBeUndefined();
  });
  it('checks a set_agent input: a valid name, no other field', () => {
    const input = (synthetic: unknown) => ({ id: 'i', threadId: 't', content: { type: 'text', text: '' }, synthetic });
    expect(validateInputMessage(input({ type: 'set_agent', agent: 'coder' })).ok).toBe(true);
    expect(validateInputMessage(input({ type: 'set_agent', agent: 'no good' })).ok).toBe(false);
    expect(validateInputMessage(input({ type: 'set_agent' })).ok).toBe(false);
    expect(validateInputMessage(input({ type: 'set_agent', agent: 'coder', extra: 1 })).ok).toBe(false);
  });
  it('checks a missing agent again after 30 s, doubling to 10 min', () => {
    expect([1, 2, 3, 5, 6, 50].map(agentRecheckMs)).toEqual([30_000, 60_000, 120_000, 480_000, 600_000, 600_000]);
  });
});
