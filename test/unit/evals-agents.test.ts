/**
 * How evals pick a slice's agent (issue 40, src/evals/agents.ts): the recorded one or the candidate, its model or the
 * candidate model, the default agent of `system`/`tools`, a changed hash; bad `agents`; agents re-tooled for an
 * experiment.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/activities/agents';
import { EvalAgents, recordedAgent, retooledAgents } from '../../src/evals/agents';
import { EvalOptionError } from '../../src/evals/errors';
import { ScriptedModel } from '../../src/model/scripted';
import type { ThreadRecord } from '../../src/store/conversation-store';
import { defineTool } from '../../src/tools/tool';

const model = new ScriptedModel(() => ({ text: 'ok' }));
const other = Object.assign(Object.create(model) as ScriptedModel, { id: 'other' });
const grep = defineTool({
  name: 'grep',
  description: 'search',
  parameters: { type: 'object', properties: {} },
  execute: () => undefined,
});
const coder = defineAgent({ name: 'coder', instructions: 'Code.', model, tools: [grep], spawns: ['reviewer'] });
const reviewer = defineAgent({ name: 'reviewer', description: 'reviews', instructions: 'Review.', model: other });
const thread: ThreadRecord = { threadId: 't', kind: 'root', rootThreadId: 't', closed: false };
const ran = (a: { name: string; hash: string }, m = 'scripted') => ({ name: a.name, model: m, hash: a.hash });

describe('EvalAgents.plan', () => {
  it("the recorded agent's instructions, tools (spawn_thread's agents too) and first model", async () => {
    const plan = await new EvalAgents({ agents: [coder, reviewer] }).plan(thread, 't/slice-0', ran(coder));
    expect([plan.agent, plan.instructions, plan.model.id, plan.changed]).toEqual([
      'coder',
      'Code.',
      'scripted',
      undefined,
    ]);
    expect(plan.specs[0]!.name).toBe('grep');
    const spawn = plan.specs.find((s) => s.name === 'spawn_thread')!;
    expect((spawn.parameters as { properties: { agent: { enum: string[] } } }).properties.agent.enum).toEqual([
      'reviewer',
    ]);
    expect(plan.recorded).toEqual(ran(coder));
  });

  it('a candidate agent, a candidate model, or both', async () => {
    const asReviewer = await new EvalAgents({ agents: [coder, reviewer], agent: 'reviewer' }).plan(
      thread,
      's',
      ran(coder),
    );
    expect([asReviewer.agent, asReviewer.instructions, asReviewer.model.id]).toEqual(['reviewer', 'Review.', 'other']);
    expect(asReviewer.specs.map((s) => s.name)).not.toContain('grep');
    const onOther = await new EvalAgents({ agents: [coder], model: other }).plan(thread, 's', ran(coder));
    expect([onOther.agent, onOther.model.id, onOther.changed]).toEqual(['coder', 'other', undefined]);
  });

  it('default: `system` and `tools` unless `agents` defines it; its hash is taken with the recorded model', async () => {
    const own = defineAgent({ name: 'default', instructions: 'Be kind.', model, tools: [grep] });
    const same = await new EvalAgents({ model: other, system: 'Be kind.', tools: [grep] }).plan(thread, 's', ran(own));
    expect([same.agent, same.instructions, same.model.id, same.changed]).toEqual([
      'default',
      'Be kind.',
      'other',
      undefined,
    ]);
    const changed = await new EvalAgents({ model, system: 'Be rude.' }).plan(thread, 's', ran(own));
    expect(changed.changed?.now).toMatch(/^[0-9a-f]{12}$/);
    expect(changed.changed?.now).not.toBe(own.hash);
    // Nothing recorded (before release 0.13): the default agent, nothing to compare.
    const old = await new EvalAgents({ model }).plan(thread, 's', undefined);
    expect([old.agent, old.recorded, old.changed]).toEqual(['default', undefined, undefined]);
    expect(recordedAgent({ name: 'bad name', model: 'x', hash: 'y' })).toBeUndefined();
  });

  it('a changed definition is reported with its hash now', async () => {
    const plan = await new EvalAgents({ agents: [coder] }).plan(thread, 's', { ...ran(coder), hash: 'aaaaaaaaaaaa' });
    expect(plan.changed).toEqual({ now: coder.hash });
  });

  it('refuses an agent nothing defines, a candidate nothing defines, a default with no model', async () => {
    await expect(new EvalAgents({ model }).plan(thread, 't/slice-3', ran(coder))).rejects.toThrow(
      "t/slice-3 ran agent 'coder', which `agents` does not define (the agents are default)",
    );
    await expect(new EvalAgents({ agents: [coder], agent: 'nobody' }).plan(thread, 's', ran(coder))).rejects.toThrow(
      "agent: no agent named 'nobody' is defined (the agents are coder, default)",
    );
    await expect(new EvalAgents({ agents: [coder] }).plan(thread, 's', undefined)).rejects.toBeInstanceOf(
      EvalOptionError,
    );
    expect(() => new EvalAgents({ agent: '../x' })).toThrow(EvalOptionError);
  });
});

describe('agents', () => {
  it('two of one name, or one not from defineAgent, are refused as an EvalOptionError', () => {
    expect(() => new EvalAgents({ agents: [coder, coder] })).toThrow("agents: two agents are named 'coder'");
    expect(() => new EvalAgents({ agents: [{ ...coder, hash: undefined } as never] })).toThrow(EvalOptionError);
  });
});

describe('retooledAgents', () => {
  it('other tools (and a model, when given), all else kept', () => {
    const ping = defineTool({
      name: 'ping',
      description: 'p',
      parameters: { type: 'object', properties: {} },
      execute: () => undefined,
    });
    const [a] = retooledAgents([coder], [ping]);
    expect([a!.name, a!.instructions, a!.spawns, a!.tools.map((t) => t.name), a!.models[0]!.model.id]).toEqual([
      'coder',
      'Code.',
      ['reviewer'],
      ['ping'],
      'scripted',
    ]);
    expect(a!.hash).not.toBe(coder.hash);
    expect(retooledAgents([coder], [ping], other)[0]!.models.map((m) => m.model.id)).toEqual(['other']);
  });
});
