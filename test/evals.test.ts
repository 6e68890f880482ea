/**
 * Replay-evals (issue 29 §1) over threads recorded by the real runtime (dev server, SQLite store): every rebuilt
 * request equals the one the slice sent, item for item (a thread with a multi-round slice and a pending call, a fork
 * of it, a thread across a compaction, a child and its parent); divergences stop, teacher-force or take a supplied result; no provider call for a recorded slice;
 * scorers; outcome scores across a reopening; exports; and the CLI.
 */
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  evalMarkdown,
  evaluateThreads,
  exactToolMatch,
  exportThread,
  importThreadExports,
  jsonSchemaCheck,
  MalformedExportError,
  parseThreadExport,
  recordScore,
  type Scorer,
  scores,
  UnknownSliceError,
  UnknownThreadError,
} from '../src/evals';
import type { EvalReport } from '../src/evals';
import type { ModelProvider, ModelRequest, ModelStreamPart } from '../src/model/provider';
import { type ScriptedReply, ScriptedModel, turnToParts } from '../src/model/scripted';
import { InvalidScoreError } from '../src/store/eval-records';
import { SqliteConversationStore } from '../src/store/sqlite';
import { toolResult } from '../src/tools/messages';
import { defineTool, type Tool, type ToolContext } from '../src/tools/tool';
import { cliRunner } from './cli-process';
import { eventually, recordingTool, startTestSystem, type TestSystem, uid } from './helpers';
import { selfOf, textOf } from './model-requests';

/** Roots obey their user: `lookup` calls the sync lookup tool, `job` the async job tool; results are acknowledged. */
const script =
  (lookupArgs: unknown = { q: 'x' }, bye = 'ack bye') =>
  (req: ModelRequest): ScriptedReply => {
    const last = req.messages.at(-1);
    if (last?.role === 'user') {
      if (last.text === 'lookup') return { toolCall: { name: 'lookup', args: lookupArgs } };
      if (last.text === 'job') return { toolCall: { name: 'job', args: { n: 1 } } };
      if (last.text === 'bye') return { text: bye };
      if (last.text === 'spawn')
        return { toolCall: { name: 'spawn_thread', args: { instructions: 'say hi', child_of: [selfOf(req)] } } };
      return { text: `ack ${last.text}` };
    }
    return { text: `got ${textOf(last)}` };
  };

const lookup = defineTool<{ q: string }>({
  name: 'lookup',
  description: 'look something up (sync)',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  sync: true,
  execute: () => 'forty-two',
});

let sys: TestSystem;
let recording: ScriptedModel;
let tools: Tool[];
/** A thread of five slices: text; a sync call and its answer (two rounds); an async call; its result; text. */
let T: string;
/** A fork of T after its second slice, with one slice of its own. */
let F: string;
const requestsOf = (model: ScriptedModel, threadId: string) => model.requests.filter((r) => selfOf(r) === threadId);

beforeAll(async () => {
  recording = new ScriptedModel(script());
  const jobs: ToolContext[] = [];
  tools = [lookup, recordingTool('job', jobs)];
  sys = await startTestSystem({ model: recording, tools });
  T = uid('rec');
  const t = sys.client.thread(T);
  for (const text of ['hello', 'lookup', 'job']) {
    await t.sendUserText(text);
    await t.waitForIdle();
  }
  const job = await eventually(() => jobs.find((j) => j.threadId === T));
  await job.send(toolResult(job, 'done'));
  await eventually(async () => ((await t.status()).slices === 4 ? true : undefined));
  await t.waitForIdle();
  await t.sendUserText('bye');
  await t.waitForIdle();
  const fork = await sys.client.forkThread(T, { at: 'slice-1', threadId: uid('fork'), input: 'again' });
  await fork.waitForIdle();
  F = fork.threadId;
});
afterAll(async () => {
  await sys?.shutdown();
});

describe('rebuilt requests', () => {
  it('are exactly what each slice sent, for a thread and its fork; the same model agrees everywhere', async () => {
    expect(requestsOf(recording, T)).toHaveLength(6); // slice 1 has two rounds
    expect(requestsOf(recording, F)).toHaveLength(1);
    const candidate = new ScriptedModel(script());
    const report = await evaluateThreads(sys.store, { threads: [T, F], model: candidate, tools, concurrency: 1 });
    expect(requestsOf(candidate, T)).toEqual(requestsOf(recording, T));
    expect(requestsOf(candidate, F)).toEqual(requestsOf(recording, F));
    expect(report.threads.map((t) => [t.threadId, t.recordedSlices, t.slices.map((s) => s.rounds.length)])).toEqual([
      [T, 5, [1, 2, 1, 1, 1]],
      [F, 1, [1]],
    ]);
    expect(report.totals).toMatchObject({
      threads: 2,
      evaluatedSlices: 6,
      evaluatedRounds: 7,
      divergedSlices: 0,
      toolMatchRate: 1,
      meanTextSimilarity: 1,
      providerCalls: 7,
      candidateErrors: 0,
      // The scripted model reports 20 tokens a request; the record holds what the recording model reported.
      candidateTokens: 140,
      recordedTokens: 140,
    });
    // Recorded tool calls are read as they were committed.
    expect(report.threads[0]!.slices[1]!.rounds.map((r) => r.recorded)).toEqual([
      { text: '', toolCall: { name: 'lookup', args: { q: 'x' } } },
      { text: 'got forty-two' },
    ]);
  });

  it('after a compaction: later slices see the summary, as they did; earlier ones what came before it', async () => {
    const C = uid('compacted');
    const t = sys.client.thread(C);
    for (const text of ['one', 'two']) {
      await t.sendUserText(text);
      await t.waitForIdle();
    }
    await t.compact();
    await eventually(async () => ((await t.status()).compaction.completed === 1 ? true : undefined));
    await t.sendUserText('three');
    await t.waitForIdle();
    const recorded = requestsOf(recording, C);
    expect(recorded).toHaveLength(3);
    // The summary took effect: the last request starts with it instead of the first four items.
    expect(recorded[2]!.messages.map(textOf)[0]).toMatch(/^\[Compacted conversation summary\]/);
    expect(recorded[2]!.messages).toHaveLength(2);
    const candidate = new ScriptedModel(script());
    const report = await evaluateThreads(sys.store, { threads: [C], model: candidate, tools });
    expect(requestsOf(candidate, C)).toEqual(recorded);
    expect(report.totals.divergedSlices).toBe(0);
  });

  it('a child: its requests carry what it inherited from its parent, as they did', async () => {
    const P = uid('parent');
    const t = sys.client.thread(P);
    await t.sendUserText('spawn');
    const child = await eventually(async () => (await t.status()).children[0]);
    await sys.client.thread(child).waitForIdle();
    await t.waitForIdle();
    const recorded = requestsOf(recording, child);
    expect(recorded.length).toBeGreaterThan(0);
    // It inherited the parent's user text and spawn call.
    expect(recorded[0]!.messages[0]).toEqual({ role: 'user', text: 'spawn' });
    const candidate = new ScriptedModel(script());
    await evaluateThreads(sys.store, { threads: [P, child], model: candidate, tools });
    expect(requestsOf(candidate, child)).toEqual(recorded);
    expect(requestsOf(candidate, P)).toEqual(requestsOf(recording, P));
  });

  it('refuses an unknown thread before calling the model, and bad options', async () => {
    const candidate = new ScriptedModel(script());
    await expect(evaluateThreads(sys.store, { threads: [T, 'nobody'], model: candidate })).rejects.toThrow(
      UnknownThreadError,
    );
    expect(candidate.requests).toHaveLength(0);
    await expect(evaluateThreads(sys.store, { threads: [], model: candidate })).rejects.toThrow(/at least one/);
    await expect(evaluateThreads(sys.store, { threads: [T], model: candidate, fromSlice: -1 })).rejects.toThrow(
      /fromSlice/,
    );
  });
});

describe('divergence', () => {
  /** Calls lookup with other arguments, and says goodbye in other words. */
  const diverging = () => new ScriptedModel(script({ q: 'y' }, 'ack and farewell'));

  it('continue (teacher forcing): recorded, diffed, and later requests are the recorded ones', async () => {
    const candidate = diverging();
    const report = await evaluateThreads(sys.store, { threads: [T], model: candidate, tools });
    expect(requestsOf(candidate, T)).toEqual(requestsOf(recording, T));
    const [thread] = report.threads;
    expect(thread!.stoppedAt).toBeUndefined();
    expect(thread!.slices.map((s) => [s.slice, s.diverged, s.resolution])).toEqual([
      [0, false, undefined],
      [1, true, 'teacher-forced'],
      [2, false, undefined],
      [3, false, undefined],
      [4, false, undefined],
    ]);
    const lookupRound = thread!.slices[1]!.rounds[0]!;
    expect(lookupRound.diff).toEqual(['- call lookup {"q":"x"}', '+ call lookup {"q":"y"}']);
    expect(report.totals.toolMatchRate).toBeCloseTo(5 / 6);
    // Another text is no divergence: it shows as similarity ('ack bye' / 'ack and farewell': 2·1/5).
    const byeRound = thread!.slices[4]!.rounds[0]!;
    expect([byeRound.diverged, byeRound.textSimilarity]).toEqual([false, 0.4]);
    const md = evalMarkdown(report);
    expect(md).toContain('| tool match | 83.3% |');
    expect(md).toContain(`### ${T}, slice 1, round 0 (teacher-forced)`);
    expect(md).toContain('-call lookup {"q":"x"}\n+call lookup {"q":"y"}');
  });

  it('stop: the thread ends at the first divergence; nothing after it is called', async () => {
    const candidate = diverging();
    const report = await evaluateThreads(sys.store, { threads: [T], model: candidate, tools, onDivergence: 'stop' });
    expect(report.threads[0]!.stoppedAt).toEqual({ slice: 1, round: 0 });
    expect(report.threads[0]!.slices.map((s) => s.resolution)).toEqual([undefined, 'stopped']);
    expect(candidate.requests).toHaveLength(2);
    expect(report.totals).toMatchObject({ stoppedThreads: 1, divergedSlices: 1, providerCalls: 2 });
  });

  it('a supplied result: later requests carry the candidate’s call and that result instead of the recorded ones', async () => {
    const candidate = diverging();
    const seen: string[] = [];
    const report = await evaluateThreads(sys.store, {
      threads: [T],
      model: candidate,
      tools,
      onDivergence: (d) => {
        seen.push(`${d.slice}/${d.round}: ${JSON.stringify(d.candidate.toolCall?.args)}`);
        return { result: 'supplied seven' };
      },
    });
    expect(seen).toEqual(['1/0: {"q":"y"}']);
    expect(report.onDivergence).toBe('custom');
    // Slice 1's second round answered the recorded call: it is not asked.
    expect(report.threads[0]!.slices.map((s) => s.rounds.length)).toEqual([1, 1, 1, 1, 1]);
    const next = requestsOf(candidate, T)[2]!; // slice 2's request
    const recorded = requestsOf(recording, T)[3]!;
    const call = next.messages.find((m) => m.role === 'tool_call');
    expect(next.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'hello'],
      ['assistant', 'ack hello'],
      ['user', 'lookup'],
      ['tool_call', ''],
      ['tool_result', 'supplied seven'],
      ['user', 'job'],
    ]);
    expect(call).toMatchObject({ role: 'tool_call', name: 'lookup', args: { q: 'y' } });
    // Everything but the replaced turn is the recorded request.
    expect(next.messages.slice(0, 3)).toEqual(recorded.messages.slice(0, 3));
    expect(next.messages.at(-1)).toEqual(recorded.messages.at(-1));
  });
});

describe('zero provider calls for the recorded part', () => {
  /** Fails the eval if asked any request a slice before `fromSlice` sent (it answers the others like the recording). */
  class GuardedModel implements ModelProvider {
    readonly id = 'guarded';
    calls = 0;
    constructor(private readonly forbidden: readonly ModelRequest[]) {}
    async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
      this.calls++;
      if (this.forbidden.some((f) => JSON.stringify(f) === JSON.stringify(request)))
        throw new Error('called for a recorded slice');
      yield* turnToParts(script()(request) as Parameters<typeof turnToParts>[0]);
    }
  }

  it('from slice 3 on: the first four requests are never sent, the last two are', async () => {
    const recorded = requestsOf(recording, T);
    const model = new GuardedModel(recorded.slice(0, 4));
    const report = await evaluateThreads(sys.store, { threads: [T], model, tools, fromSlice: 3 });
    expect(report.totals).toMatchObject({
      candidateErrors: 0,
      providerCalls: 2,
      evaluatedSlices: 2,
      recordedSlices: 5,
    });
    expect(model.calls).toBe(2);
    expect(report.threads[0]!.slices.map((s) => s.slice)).toEqual([3, 4]);
    // The guard works: from slice 0 it is asked the forbidden requests, and the eval reports its failures.
    const all = await evaluateThreads(sys.store, {
      threads: [T],
      model: new GuardedModel(recorded.slice(0, 4)),
      tools,
    });
    expect(all.totals.candidateErrors).toBe(4);
    expect(all.threads[0]!.slices[0]!.rounds[0]!.candidate.error).toBe('called for a recorded slice');
  });

  it('past the last slice: nothing is called at all', async () => {
    const model = new GuardedModel([]);
    const report = await evaluateThreads(sys.store, { threads: [T, F], model, fromSlice: 99 });
    expect([model.calls, report.totals.providerCalls, report.totals.evaluatedSlices]).toEqual([0, 0, 0]);
  });
});

describe('scorers', () => {
  it('exact tool match, a JSON-schema check against the offered tool, and a user’s judge model', async () => {
    // Calls lookup with a number where the schema wants a string.
    const candidate = new ScriptedModel(script({ q: 5 }));
    const judgeModel = new ScriptedModel((req) => ({ text: textOf(req.messages.at(-1)).includes('got') ? '1' : '0' }));
    /** An LLM judge is the user's own scorer: it asks a model of their choice and turns its answer into a score. */
    const judge: Scorer = async ({ candidate: c }) => {
      let text = '';
      for await (const p of judgeModel.stream(
        {
          threadId: 'judge',
          system: 'Answer 1 if the reply reports a result, else 0.',
          messages: [{ role: 'user', text: c.text }],
          tools: [],
        },
        new AbortController().signal,
      ))
        if (p.type === 'text-delta') text += p.text;
      return { name: 'judge', value: Number(text) };
    };
    const report = await evaluateThreads(sys.store, {
      threads: [T],
      model: candidate,
      tools,
      scorers: [exactToolMatch(), jsonSchemaCheck(), judge],
    });
    const rounds = report.threads[0]!.slices.flatMap((s) => s.rounds);
    expect(rounds.map((r) => r.scores.map((s) => `${s.name}=${s.value}`).join(' '))).toEqual([
      'exact_tool_match=1 judge=0',
      'exact_tool_match=0 json_schema=0 judge=0',
      'exact_tool_match=1 judge=1',
      'exact_tool_match=1 json_schema=1 judge=0',
      'exact_tool_match=1 judge=1',
      'exact_tool_match=1 judge=0',
    ]);
    expect(rounds[1]!.scores.find((s) => s.name === 'json_schema')!.detail).toMatch(/must be string/);
    expect(report.totals.scores).toEqual({
      exact_tool_match: { count: 6, mean: 5 / 6 },
      json_schema: { count: 2, mean: 0.5 },
      judge: { count: 6, mean: 2 / 6 },
    });
    expect(judgeModel.requests).toHaveLength(6);
  });
});

describe('outcome scores', () => {
  it('are stored with a thread or a slice, survive reopening the store, and show in eval reports', async () => {
    const writer = new SqliteConversationStore(sys.storePath);
    await recordScore(writer, { threadId: T, name: 'merged', value: 1, note: 'PR #12' });
    await recordScore(writer, { threadId: T, slice: 2, name: 'good_call', value: 0.5 });
    await recordScore(writer, { threadId: T, slice: `${T}/slice-4`, name: 'good_call', value: 1 });
    await expect(recordScore(writer, { threadId: 'nobody', name: 'merged', value: 1 })).rejects.toThrow(
      UnknownThreadError,
    );
    await expect(recordScore(writer, { threadId: T, slice: 99, name: 'x', value: 1 })).rejects.toThrow(
      UnknownSliceError,
    );
    await expect(recordScore(writer, { threadId: T, name: 'x', value: Number.NaN })).rejects.toThrow(InvalidScoreError);
    await writer.close();

    const reader = new SqliteConversationStore(sys.storePath, { readonly: true });
    try {
      expect((await scores(reader, { threadId: T })).map((s) => [s.sliceId, s.name, s.value])).toEqual([
        [undefined, 'merged', 1],
        [`${T}/slice-2`, 'good_call', 0.5],
        [`${T}/slice-4`, 'good_call', 1],
      ]);
      const report = await evaluateThreads(reader, { threads: [T], model: new ScriptedModel(script()), fromSlice: 99 });
      expect(report.threads[0]!.scores.map((s) => s.name)).toEqual(['merged', 'good_call', 'good_call']);
      expect(evalMarkdown(report)).toContain(`| ${T.slice(0, 29)}`);
      expect(evalMarkdown(report)).toContain('| merged | 1 | PR #12 |');
    } finally {
      await reader.close();
    }
  });
});

describe('exported threads', () => {
  it('evaluate the same away from their store: a fork’s export holds its source', async () => {
    const exported = JSON.parse(JSON.stringify(await exportThread(sys.store, F))) as unknown;
    const store = await importThreadExports([parseThreadExport(exported, 'f.json')]);
    const candidate = new ScriptedModel(script());
    const report = await evaluateThreads(store, { threads: [F], model: candidate, tools });
    expect(requestsOf(candidate, F)).toEqual(requestsOf(recording, F));
    expect(report.totals.divergedSlices).toBe(0);
  });

  it('refuses what is not an export, naming the file and the fault', async () => {
    const good = JSON.parse(JSON.stringify(await exportThread(sys.store, T))) as Record<string, unknown>;
    for (const [bad, fault] of [
      [[], /not a JSON object/],
      [{ ...good, format: 'other' }, /format must be/],
      [{ ...good, version: 2 }, /version 2/],
      [{ ...good, threads: [] }, /non-empty threads/],
      [{ ...good, threads: [{ record: { threadId: T, rootThreadId: T, kind: 'root' }, items: 'x' }] }, /items/],
      [{ ...good, threadId: 'other' }, /last of threads/],
    ] as const) {
      expect(() => parseThreadExport(bad, 'bad.json')).toThrow(MalformedExportError);
      expect(() => parseThreadExport(bad, 'bad.json')).toThrow(fault);
    }
    expect(() => parseThreadExport(null, 'x.json')).toThrow(/x\.json/);
    await expect(exportThread(sys.store, 'nobody')).rejects.toThrow(UnknownThreadError);
  });
});

describe('CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evals-cli-'));
  const cli = (...args: string[]) => cliRunner(() => ['--store', sys.storePath], {}).run(...args);

  it('eval (ids and export files), export, score and scores; bad input exits 2 with the reason', async () => {
    const res = await cli('eval', '--threads', T, '--model', 'simulated', '--json');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout) as EvalReport;
    expect(report.threads.map((t) => [t.threadId, t.slices.length])).toEqual([[T, 5]]);
    expect(report.totals.providerCalls).toBe(6);
    expect(Object.keys(report.totals.scores)).toContain('exact_tool_match');

    const md = await cli('eval', '--threads', T, '--model', 'simulated', '--from-slice', '4');
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('# Eval: simulated');
    expect(md.stdout).toContain('From slice 4, on divergence: continue. 1 threads, 5 recorded slices, 1 evaluated');

    const file = join(dir, 'fork.json');
    expect((await cli('export', F, '--out', file)).code).toBe(0);
    const fromFile = await cli(
      'eval',
      '--threads',
      `${file},${T}`,
      '--model',
      'simulated',
      '--json',
      '--from-slice',
      '99',
    );
    expect(fromFile.code).toBe(0);
    expect((JSON.parse(fromFile.stdout) as EvalReport).threads.map((t) => t.threadId)).toEqual([T, F]);

    // A user's modules: the worker's tools (offered, never run), scorers and what to do on a divergence.
    writeFileSync(
      join(dir, 'tools.js'),
      `exports.tools = [{ name: 'lookup', description: 'look up', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];`,
    );
    writeFileSync(
      join(dir, 'scorers.js'),
      'exports.scorers = [(r) => ({ name: "offered", value: ' +
        'r.request.tools.some((t) => t.name === "lookup") && r.request.system.startsWith("You are the candidate prompt.") ? 1 : 0 })];\n' +
        `exports.onDivergence = () => 'stop';`,
    );
    writeFileSync(join(dir, 'system.txt'), 'You are the candidate prompt.');
    const withModules = await cli(
      'eval',
      '--threads',
      T,
      '--model',
      'simulated',
      '--json',
      '--tools',
      join(dir, 'tools.js'),
      '--scorers',
      join(dir, 'scorers.js'),
      '--system-file',
      join(dir, 'system.txt'),
    );
    expect(withModules.stderr).toBe('');
    const r2 = JSON.parse(withModules.stdout) as EvalReport;
    // The simulated model calls the first tool it is offered after a user text: lookup, where the record has none.
    expect(r2.threads[0]!.slices[0]!.rounds[0]!.candidate.toolCall?.name).toBe('lookup');
    expect([r2.onDivergence, r2.threads[0]!.stoppedAt]).toEqual(['custom', { slice: 0, round: 0 }]);
    expect(r2.totals.scores.offered).toEqual({ count: 1, mean: 1 });

    const scored = await cli('score', F, 'merged', 'true', '--slice', '0', '--note', 'by hand');
    expect(scored.code).toBe(0);
    expect(scored.stdout).toMatch(new RegExp(`^scored ${F} ${F}/slice-0: merged = 1 \\(`));
    const listed = await cli('scores', '--thread', F, '--json');
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { name: string; value: number; note: string }),
    ).toMatchObject([{ name: 'merged', value: 1, note: 'by hand' }]);

    for (const [args, message] of [
      [['eval', '--threads', 'nobody', '--model', 'simulated'], /thread nobody is not in/],
      [['eval', '--threads', T, '--model', 'simulated', '--on-divergence', 'maybe'], /stop or continue/],
      [['eval', '--threads', T, '--model', 'nonsense:x'], /unknown model provider/],
      [['score', T, 'merged', 'NaN'], /is a number/],
      [['score', T, 'merged', '1', '--slice', '42'], /no slice 42/],
      [['score', 'nobody', 'merged', '1'], /thread nobody is not in/],
    ] as const) {
      const r = await cli(...args);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
    writeFileSync(join(dir, 'junk.json'), '{"format":"x"');
    const junk = await cli('eval', '--threads', join(dir, 'junk.json'), '--model', 'simulated');
    expect([junk.code, junk.stderr]).toEqual([2, expect.stringMatching(/junk\.json: not JSON/)]);
  });

  it('export --out leaves the file 0600 and whole, even one that was there readable by all', async () => {
    // The mode a file is created with does not apply to one that exists (issue 38, finding 9a).
    const file = join(dir, 'shared.json');
    writeFileSync(file, 'x'.repeat(100_000));
    chmodSync(file, 0o644);
    expect((await cli('export', T, '--out', file)).code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith('}\n')).toBe(true); // no tail of the longer text it replaced
    expect(parseThreadExport(JSON.parse(text), file).threadId).toBe(T);
    // A new file, whatever the umask.
    const fresh = join(dir, 'fresh.json');
    const umask = process.umask(0);
    try {
      expect((await cli('export', T, '--out', fresh)).code).toBe(0);
    } finally {
      process.umask(umask);
    }
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
  });
});
