/**
 * Replay-evals of agents (issue 40 §2): slices of two agents with other instructions and tools, recorded on one
 * worker (dev server, SQLite store), are each rebuilt with the definition of the agent they recorded — the request
 * the candidate gets equals the one the slice sent; a candidate `agent` or `model` changes what is rebuilt or who
 * answers; a definition changed since the slice ran is reported; slices recorded before agents (no `agent`) are the
 * default agent's; the CLI's `--tools` agents, `--agent` and `--model`; and `experiment run` with a candidate agent.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineAgent } from '../src/activities/agents';
import {
  EvalOptionError,
  type EvalReport,
  evalMarkdown,
  evaluateThreads,
  exportThread,
  importThreadExports,
} from '../src/evals';
import { type ExperimentResult, experimentTools, parseExperiment, runExperiment } from '../src/experiments';
import type { ModelProvider, ModelRequest } from '../src/model/provider';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import { SqliteConversationStore } from '../src/store/sqlite';
import { defineTool } from '../src/tools/tool';
import { cliRunner } from './cli-process';
import { startTestSystem, type TestSystem, uid } from './helpers';
import { selfOf, textOf } from './model-requests';

/** Calls a tool only when the request offers it; says which prompt it runs under. */
const script = (req: ModelRequest): ScriptedReply => {
  const offered = (name: string) => req.tools.some((t) => t.name === name);
  const role = /^You are the (\w+)\./.exec(req.system)?.[1] ?? 'default';
  const last = req.messages.at(-1);
  if (last?.role === 'user') {
    if (last.text === 'test')
      return offered('run_tests') ? { toolCall: { name: 'run_tests', args: {} } } : { text: `${role} cannot test` };
    if (last.text === 'diff')
      return offered('read_diff')
        ? { toolCall: { name: 'read_diff', args: { path: 'a.ts' } } }
        : { text: `${role} cannot diff` };
    if (last.text === 'hello' && offered('ping')) return { toolCall: { name: 'ping', args: {} } };
    return { text: `${role}: ack ${last.text}` };
  }
  return { text: `${role}: got ${textOf(last)}` };
};

const runTests = defineTool({
  name: 'run_tests',
  description: 'run the test suite (sync)',
  parameters: { type: 'object', properties: {} },
  sync: true,
  execute: () => '12 passed',
});
const readDiff = defineTool<{ path: string }>({
  name: 'read_diff',
  description: 'read the diff of a file (sync)',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  sync: true,
  execute: () => '+ one line',
});

const PING_FILE = {
  name: 'ping',
  tools: [{ name: 'ping', description: 'subscribe to pings' }],
  base: { steps: [{ send: 'hello' }] },
  timeline: [{ answer: 'ping', text: 'subscribed', subscription: true }, { slot: 'now' }],
  events: { kind: 'subscription', on: 'ping', items: [{ label: 'a', text: 'ping a' }] },
};
const PING = parseExperiment(PING_FILE, 'ping.json');

/** The agents as the worker hosts them, on `model`. */
const agentsOn = (model: ModelProvider, coderInstructions = 'You are the coder. Fix what fails.') => [
  defineAgent({
    name: 'coder',
    description: 'writes code',
    instructions: coderInstructions,
    model,
    tools: [runTests],
    spawns: ['reviewer'],
  }),
  defineAgent({
    name: 'reviewer',
    description: 'reviews a diff',
    instructions: 'You are the reviewer. Be brief.',
    model,
    tools: [readDiff],
  }),
  defineAgent({ name: 'pinger', instructions: 'You are the pinger.', model, tools: experimentTools(PING) }),
];

/** A model with another id that records into (and answers as) `base`. */
const renamed = (base: ScriptedModel, id: string): ScriptedModel =>
  Object.assign(Object.create(base) as ScriptedModel, { id });

let sys: TestSystem;
let recording: ScriptedModel;
/** A coder thread (a two-round slice), a reviewer thread, a default thread. */
let A: string;
let B: string;
let D: string;
const requestsOf = (model: ScriptedModel, threadId: string) => model.requests.filter((r) => selfOf(r) === threadId);
const toolNames = (r: ModelRequest) => r.tools.map((t) => t.name);

beforeAll(async () => {
  recording = new ScriptedModel(script);
  sys = await startTestSystem({ model: recording, agents: agentsOn(recording) });
  const run = async (threadId: string, agent: string | undefined, texts: string[]) => {
    if (agent) await sys.client.startThread({ threadId, agent });
    for (const text of texts) {
      await sys.client.thread(threadId).sendUserText(text);
      await sys.client.thread(threadId).waitForIdle();
    }
  };
  A = uid('coder');
  B = uid('reviewer');
  D = uid('default');
  await Promise.all([run(A, 'coder', ['hello', 'test']), run(B, 'reviewer', ['diff']), run(D, undefined, ['hello'])]);
});
afterAll(async () => {
  await sys?.shutdown();
});

describe('each slice is rebuilt with the agent it recorded', () => {
  it("its agent's instructions and tools (spawn_thread's agents too): every request equals the recorded one", async () => {
    expect(requestsOf(recording, A)).toHaveLength(3); // hello; test: run_tests, then its answer
    const candidate = new ScriptedModel(script);
    const agents = [...agentsOn(candidate), defineAgent({ name: 'default', model: candidate })];
    const report = await evaluateThreads(sys.store, { threads: [A, B, D], agents, concurrency: 1 });
    for (const t of [A, B, D]) expect(requestsOf(candidate, t)).toEqual(requestsOf(recording, t));

    const [coderReq, reviewerReq, defaultReq] = [A, B, D].map((t) => requestsOf(candidate, t)[0]!) as [
      ModelRequest,
      ModelRequest,
      ModelRequest,
    ];
    expect(coderReq.system).toMatch(/^You are the coder\. Fix what fails\./);
    expect(reviewerReq.system).toMatch(/^You are the reviewer\. Be brief\./);
    expect(defaultReq.system).not.toMatch(/^You are the/);
    expect(toolNames(coderReq)[0]).toBe('run_tests');
    expect(toolNames(reviewerReq)[0]).toBe('read_diff');
    expect(toolNames(defaultReq)).not.toContain('run_tests');
    const spawnAgents = (r: ModelRequest) =>
      (r.tools.find((t) => t.name === 'spawn_thread')!.parameters as { properties: { agent?: { enum: string[] } } })
        .properties.agent?.enum;
    expect([spawnAgents(coderReq), spawnAgents(reviewerReq)]).toEqual([['reviewer'], undefined]);

    const coder = agents[0]!;
    expect(report.threads[0]!.slices.map((s) => s.agent)).toEqual([
      { name: 'coder', model: 'scripted', recorded: { name: 'coder', model: 'scripted', hash: coder.hash } },
      { name: 'coder', model: 'scripted', recorded: { name: 'coder', model: 'scripted', hash: coder.hash } },
    ]);
    expect(report.changedAgents).toEqual([]);
    expect(report.totals).toMatchObject({ evaluatedRounds: 6, divergedSlices: 0, toolMatchRate: 1, providerCalls: 6 });
    expect(report.model).toBe('scripted');
    const md = evalMarkdown(report);
    expect(md).toContain('| thread | slice | round | agent |');
    expect(md).not.toContain('Changed agent definitions');
  });

  it('the default agent is `system` and `tools` when `agents` does not define it, and answers with `model`', async () => {
    const candidate = new ScriptedModel(script);
    const report = await evaluateThreads(sys.store, { threads: [D], model: candidate });
    expect(requestsOf(candidate, D)).toEqual(requestsOf(recording, D));
    expect(report.changedAgents).toEqual([]); // the worker's own options were those: no prompt, no tools
  });

  it('a slice recorded before agents (no `agent` in its result) is rebuilt as the default agent', async () => {
    const exported = await exportThread(sys.store, D);
    for (const t of exported.threads) for (const s of t.slices) delete s.result.agent;
    const candidate = new ScriptedModel(script);
    const report = await evaluateThreads(await importThreadExports([exported]), {
      threads: [D],
      model: candidate,
      system: 'You are the old prompt.',
    });
    expect(requestsOf(candidate, D)[0]!.system).toMatch(/^You are the old prompt\./);
    expect(report.threads[0]!.slices[0]!.agent).toEqual({ name: 'default', model: 'scripted' });
    expect(report.changedAgents).toEqual([]); // nothing recorded, nothing to compare
  });
});

describe('candidates', () => {
  it('agent: every slice is rebuilt as if that agent had run it, and answered by its model', async () => {
    const candidate = new ScriptedModel(script);
    const report = await evaluateThreads(sys.store, { threads: [A], agents: agentsOn(candidate), agent: 'reviewer' });
    const asked = requestsOf(candidate, A);
    expect(asked).toHaveLength(3);
    for (const r of asked) {
      expect(r.system).toMatch(/^You are the reviewer\./);
      expect(toolNames(r)).toContain('read_diff');
      expect(toolNames(r)).not.toContain('run_tests');
    }
    // The same history up to the request: only the agent's part changed.
    expect(asked.map((r) => r.messages)).toEqual(requestsOf(recording, A).map((r) => r.messages));
    const test = report.threads[0]!.slices[1]!;
    expect(test.agent).toMatchObject({ name: 'reviewer', recorded: { name: 'coder' } });
    expect(test.rounds[0]!.candidate).toEqual({ text: 'reviewer cannot test' });
    expect(test.diverged).toBe(true);
    expect(report.agent).toBe('reviewer');
    const md = evalMarkdown(report);
    expect(md).toContain('# Eval: scripted as agent reviewer');
    expect(md).toContain('| coder → reviewer |');
  });

  it('model: the recorded agent with another model (its requests, the other model answers)', async () => {
    const base = new ScriptedModel(script);
    const other = renamed(base, 'candidate-2');
    const report = await evaluateThreads(sys.store, {
      threads: [A, B],
      agents: agentsOn(new ScriptedModel(() => ({ text: 'never asked' }))),
      model: other,
      prices: { 'candidate-2': { input: 1, output: 2 } },
    });
    for (const t of [A, B]) expect(requestsOf(base, t)).toEqual(requestsOf(recording, t));
    expect(report.model).toBe('candidate-2');
    expect(report.threads.flatMap((t) => t.slices.map((s) => [s.agent.name, s.agent.model]))).toEqual([
      ['coder', 'candidate-2'],
      ['coder', 'candidate-2'],
      ['reviewer', 'candidate-2'],
    ]);
    // 5 calls (A: 3 rounds, B: 2) of 10 input and 10 output tokens at $1 and $2 per million.
    expect(report.totals.candidateUsd).toBeCloseTo((5 * 10 * 1 + 5 * 10 * 2) / 1e6, 12);
  });

  it('fails before any call when a slice ran an agent nothing defines, or the candidate names none', async () => {
    const candidate = new ScriptedModel(script);
    await expect(evaluateThreads(sys.store, { threads: [D, A], model: candidate })).rejects.toThrow(
      /slice-0 ran agent 'coder', which `agents` does not define/,
    );
    await expect(
      evaluateThreads(sys.store, { threads: [A], agents: agentsOn(candidate), agent: 'nobody' }),
    ).rejects.toBeInstanceOf(EvalOptionError);
    await expect(evaluateThreads(sys.store, { threads: [D], agents: agentsOn(candidate) })).rejects.toThrow(
      /has no model: pass the candidate `model`/,
    );
    expect(candidate.requests).toEqual([]);
  });
});

describe('a definition changed since the slice ran', () => {
  it('is reported (recorded and current hash, the slices) and the slice is rebuilt with it as it is now', async () => {
    const candidate = new ScriptedModel(script);
    const [coderNow, ...rest] = agentsOn(candidate, 'You are the coder. Now with tests first.');
    const report = await evaluateThreads(sys.store, {
      threads: [A, B],
      agents: [coderNow!, ...rest],
    });
    const [coderThen] = agentsOn(recording);
    expect(coderNow!.hash).not.toBe(coderThen!.hash);
    expect(report.changedAgents).toEqual([
      { agent: 'coder', recorded: coderThen!.hash, now: coderNow!.hash, slices: [`${A}/slice-0`, `${A}/slice-1`] },
    ]);
    expect(report.threads[0]!.slices[0]!.agent.changed).toEqual({ now: coderNow!.hash });
    expect(report.threads[1]!.slices[0]!.agent.changed).toBeUndefined();
    expect(requestsOf(candidate, A)[0]!.system).toMatch(/^You are the coder\. Now with tests first\./);
    const md = evalMarkdown(report);
    expect(md).toContain('## Changed agent definitions');
    expect(md).toContain(`| coder | ${coderThen!.hash} | ${coderNow!.hash} | 2: ${A}/slice-0, ${A}/slice-1 |`);
  });

  it("the default agent's too: another `system` than the worker's", async () => {
    const report = await evaluateThreads(sys.store, {
      threads: [D],
      model: new ScriptedModel(script),
      system: 'You are a new default.',
    });
    expect(report.changedAgents.map((c) => [c.agent, c.slices])).toEqual([['default', [`${D}/slice-0`]]]);
  });
});

describe('CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evals-agents-cli-'));
  const cli = (...args: string[]) => cliRunner(() => ['--store', sys.storePath], {}).run(...args);
  const agentsModule = join(dir, 'tools.ts');
  // A worker's --tools module: no tools of the default agent, two agents on the simulated model.
  writeFileSync(
    agentsModule,
    `import { defineAgent } from ${JSON.stringify(join(__dirname, '..', 'src', 'activities', 'agents'))};
const params = { type: 'object' as const, properties: {} };
const tool = (name: string, description: string) => ({ name, description, parameters: params, sync: true as const, execute: () => '' });
export const tools = [];
export const agents = [
  defineAgent({ name: 'coder', instructions: 'You are the coder. Fix what fails.', model: 'simulated', spawns: ['reviewer'],
    tools: [tool('run_tests', 'run the test suite (sync)')] }),
  defineAgent({ name: 'reviewer', instructions: 'You are the reviewer. Be brief.', model: 'simulated',
    tools: [tool('read_diff', 'read the diff of a file (sync)')] }),
];\n`,
  );
  const scorersModule = join(dir, 'scorers.js');
  // What each round was asked: the prompt's first words and the first tool offered.
  writeFileSync(
    scorersModule,
    'exports.scorers = [(r) => ({ name: "asked:" + r.request.system.split(".")[0] + "|" + r.request.tools[0].name, value: 1 })];\n',
  );
  const scoreNames = (r: EvalReport) =>
    Object.keys(r.totals.scores)
      .filter((n) => n.startsWith('asked:'))
      .sort();

  it("eval --tools with the worker's agents: each slice with its agent; --agent and --model name a candidate", async () => {
    const own = await cli(
      'eval',
      '--threads',
      `${A},${B}`,
      '--tools',
      agentsModule,
      '--scorers',
      scorersModule,
      '--json',
    );
    expect([own.code, own.stderr]).toEqual([0, '']);
    const r1 = JSON.parse(own.stdout) as EvalReport;
    expect(scoreNames(r1)).toEqual(['asked:You are the coder|run_tests', 'asked:You are the reviewer|read_diff']);
    expect(r1.model).toBe('simulated'); // each agent's own model
    // The module's agents run on another model than the recorded ones: their hashes differ, which is reported.
    expect(r1.changedAgents.map((c) => c.agent).sort()).toEqual(['coder', 'reviewer']);

    const asReviewer = await cli(
      'eval',
      '--threads',
      A,
      '--tools',
      agentsModule,
      '--agent',
      'reviewer',
      '--scorers',
      scorersModule,
      '--json',
    );
    expect(asReviewer.code).toBe(0);
    const r2 = JSON.parse(asReviewer.stdout) as EvalReport;
    expect(scoreNames(r2)).toEqual(['asked:You are the reviewer|read_diff']);
    expect([r2.agent, r2.threads[0]!.slices[0]!.agent.name]).toEqual(['reviewer', 'reviewer']);

    const md = await cli('eval', '--threads', A, '--tools', agentsModule, '--model', 'simulated', '--from-slice', '1');
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('# Eval: simulated\n');
    expect(md.stdout).toContain('## Changed agent definitions');

    for (const [args, message] of [
      [['eval', '--threads', A], /name the candidate: --model, or a --tools module with `agents`/],
      [['eval', '--threads', A, '--model', 'simulated'], /ran agent 'coder', which `agents` does not define/],
      [['eval', '--threads', A, '--tools', agentsModule, '--agent', 'nobody'], /no agent named 'nobody'/],
      [['eval', '--threads', A, '--tools', scorersModule], /must export `tools`/],
    ] as const) {
      const r = await cli(...args);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
  });
});

describe('experiments with a candidate agent', () => {
  it('runExperiment({ agent }): the base and every fork run that agent', async () => {
    const before = recording.requests.length;
    const result = await runExperiment(sys.client, PING, { agent: 'pinger' });
    expect(result.agent).toBe('pinger');
    expect(result.variants.map((v) => v.notes)).toEqual([[]]); // the pinger called ping: the timeline answered it
    const threads = [result.baseThreadId, result.variants[0]!.threadId];
    for (const t of threads) {
      const slices = await sys.store.evals.slices(t);
      expect(slices.length).toBeGreaterThan(0);
      expect(slices.map((s) => s.result.agent?.name)).toEqual(slices.map(() => 'pinger'));
    }
    const asked = recording.requests.slice(before).filter((r) => threads.includes(selfOf(r)));
    expect(asked.length).toBeGreaterThan(1);
    for (const r of asked) expect(r.system).toMatch(/^You are the pinger\./);
    expect(result.variants[0]!.decision.text).toMatch(/^pinger: /);
  });

  it('experiment run --agents --agent: the agent, with the experiment tools, runs every variant', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'experiment-agents-'));
    const file = join(dir, 'ping.json');
    writeFileSync(file, JSON.stringify(PING_FILE));
    const mod = join(dir, 'agents.ts');
    writeFileSync(
      mod,
      `import { defineAgent } from ${JSON.stringify(join(__dirname, '..', 'src', 'activities', 'agents'))};\n` +
        `export const agents = [defineAgent({ name: 'pinger', instructions: 'You are the pinger.', model: 'simulated' })];\n`,
    );
    const cli = cliRunner(() => ['--address', inject('temporalAddress'), '--data-dir', dir], {});
    const res = await cli.run('experiment', 'run', file, '--agents', mod, '--agent', 'pinger', '--json');
    expect([res.code, res.stderr.includes('Error')]).toEqual([0, false]);
    const out = JSON.parse(res.stdout) as ExperimentResult & { model: string; store: string };
    expect([out.model, out.agent]).toEqual(['simulated', 'pinger']);
    // The simulated model calls the first tool offered: the experiment's ping, not a tool of the agent's own.
    expect(out.variants.map((v) => v.notes)).toEqual([[]]);
    const store = new SqliteConversationStore(out.store);
    try {
      const slices = await store.evals.slices(out.variants[0]!.threadId);
      expect(slices.map((s) => s.result.agent?.name)).toEqual(slices.map(() => 'pinger'));
    } finally {
      await store.close();
    }
    const bad = await cli.run('experiment', 'run', file, '--agent', 'pinger');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--agent names one of --agents/)]);
  });
});
