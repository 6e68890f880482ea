/**
 * Interleaving experiments (issue 29 §2) on the real runtime (dev server, SQLite store): the two shipped experiment
 * files run on a scripted model, and their decision tables are checked exactly. The scripted agent reads events as a
 * model might: inline (associative) events by the latest one, reports of event children by whether any reported a
 * failure — so arrival order, timing, count and processing mode each change what it ends up saying.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  decisionOf,
  ExperimentFileError,
  experimentMarkdown,
  experimentTools,
  parseExperiment,
  permutations,
  runExperiment,
  sampledOrders,
  type ExperimentFile,
  type ExperimentResult,
} from '../src/experiments';
import type { ModelMessage, ModelRequest } from '../src/model/provider';
import { type ScriptedReply, ScriptedModel } from '../src/model/scripted';
import { cliRunner } from './cli-process';
import { startTestSystem, type TestSystem } from './helpers';
import { seededWith, selfOf, textOf } from './model-requests';

const load = (name: string): ExperimentFile =>
  parseExperiment(JSON.parse(readFileSync(join(__dirname, '..', 'docs', 'experiments', name), 'utf8')), name);
const CI = load('ci-events-race-question.json');
const CHILD = load('child-report-during-call.json');

const injected = (m: ModelMessage) => m.role === 'tool_result' && m.name === 'receive_event__injected';
const spawn = (self: string, what: string): ScriptedReply => ({
  toolCall: { name: 'spawn_thread', args: { instructions: `Check the ${what}, then report.`, child_of: [self] } },
});

function script(req: ModelRequest): ScriptedReply {
  const self = selfOf(req);
  const last = req.messages.at(-1);
  const text = textOf(last);
  const events = req.messages.filter(injected).map(textOf);
  // Reports come wrapped in the runtime's report text: look for what the children wrote inside it.
  const reports = events.filter((e) => e.includes('CI event:'));
  // An event child (threaded mode) reports the event and closes.
  if (seededWith(req, 'You are now INSIDE the thread for processing the single event'))
    return { toolCall: { name: 'close_thread', args: { thread_id: self, report_to_parent: `CI event: ${text}` } } };
  // A checker runs its check, reports what it found, and rests.
  if (seededWith(req, 'You are now INSIDE the thread that you requested to create.')) {
    if (last?.role === 'tool_result' && last.name === 'run_check')
      return { toolCall: { name: 'report_to_parent', args: { report: `Checker: ${text}` } } };
    if (last?.role === 'tool_result' && last.name === 'report_to_parent') return { text: 'checker done' };
    return { toolCall: { name: 'run_check', args: { check: 'assigned' } } };
  }
  if (last?.role === 'user') {
    if (text.startsWith('Watch CI')) return { toolCall: { name: 'watch_ci', args: { build_id: '42' } } };
    if (text.startsWith('Can I deploy')) return { toolCall: { name: 'get_build_status', args: { build_id: '42' } } };
    if (text.startsWith('Spawn two checkers')) return spawn(self, 'release notes');
    if (text.startsWith("What is today's deploy window")) return { toolCall: { name: 'get_deploy_window', args: {} } };
    return { text: `Noted: ${text}` };
  }
  switch (last?.role === 'tool_result' ? last.name : '') {
    case 'watch_ci':
      return { text: 'Watching build 42.' };
    case 'spawn_thread':
      return req.messages.filter((m) => m.role === 'tool_call' && m.name === 'spawn_thread').length < 2
        ? spawn(self, 'security review')
        : { text: 'Two checkers are running.' };
    case 'get_build_status': {
      const latest = events.at(-1);
      if (latest === undefined) return { text: 'Tests are still running: wait.' };
      const failed = latest.includes('CI event:')
        ? reports.some((r) => r.includes('FAILED'))
        : latest.includes('FAILED');
      return {
        text: failed ? 'Build 42 failed earlier: do not deploy while tests run.' : 'Tests are running again: wait.',
      };
    }
    case 'get_deploy_window':
      return {
        text: events.some((e) => e.includes('finding'))
          ? 'Deploy window 14:00-16:00 UTC, but hold: a security finding is open.'
          : 'Deploy between 14:00 and 16:00 UTC.',
      };
    case 'receive_event__injected':
      if (text.includes('Checker:'))
        return {
          text: text.includes('finding')
            ? 'Hold the release: the security review has an open finding.'
            : 'Release notes are fine.',
        };
      if (text.includes('CI event:'))
        return {
          text: reports.some((r) => r.includes('FAILED'))
            ? 'A CI event reported a failure: do not deploy.'
            : 'CI reports passed: you can deploy.',
        };
      return { text: text.includes('FAILED') ? 'Build 42 failed: do not deploy.' : 'Build 42 passed: you can deploy.' };
  }
  return { text: 'ok' };
}

/** A table as `level: n decision=count ...` lines, for exact comparison. */
const rows = (r: ExperimentResult) =>
  Object.entries(r.table.factors).flatMap(([factor, levels]) =>
    Object.entries(levels).map(
      ([level, cell]) =>
        `${factor} ${level}: ${cell.n} ` +
        r.table.decisions.map((d) => `${d.replace('text:', '')}=${cell.decisions[d] ?? 0}`).join(' '),
    ),
  );

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({
    model: new ScriptedModel(script),
    tools: [...experimentTools(CI), ...experimentTools(CHILD)],
  });
});
afterAll(async () => {
  await sys?.shutdown();
});

describe('shipped experiments on the scripted model', () => {
  it('CI events racing a user question: 24 variants, the exact table', async () => {
    const result = await runExperiment(sys.client, CI);
    expect(result.variants).toHaveLength(24);
    expect(result.variants.flatMap((v) => v.notes)).toEqual([]);
    expect(rows(result)).toEqual([
      'order failed → passed: 12 deploy=2 do-not-deploy=9 wait=1',
      'order passed → failed: 12 deploy=4 do-not-deploy=6 wait=2',
      'timing before: 8 deploy=0 do-not-deploy=5 wait=3',
      'timing during: 8 deploy=3 do-not-deploy=5 wait=0',
      'timing after: 8 deploy=3 do-not-deploy=5 wait=0',
      'count 1: 12 deploy=4 do-not-deploy=6 wait=2',
      'count 2: 12 deploy=2 do-not-deploy=9 wait=1',
      'mode associative: 12 deploy=4 do-not-deploy=6 wait=2',
      'mode threaded: 12 deploy=2 do-not-deploy=9 wait=1',
      'all all: 24 deploy=6 do-not-deploy=15 wait=3',
    ]);
    // Each variant is a fork of the one recorded base; the markdown shows counts and rates.
    const md = experimentMarkdown(result, 'scripted');
    expect(md).toContain('24 variants × 1 repetitions = 24 runs');
    expect(md).toContain('| before | 8 | 0 (0%) | 5 (63%) | 3 (38%) |');
    const fork = await sys.client.thread(result.variants[0]!.threadId).status();
    expect(fork.forkedFrom?.threadId).toBe(result.baseThreadId);
  });

  it('a child report arriving while a call is pending: 12 variants, the exact table', async () => {
    // One repetition: the scripted model decides alike every time (the CLI test below runs repetitions).
    const result = await runExperiment(sys.client, CHILD);
    expect(result.variants).toHaveLength(12);
    expect(result.variants.flatMap((v) => v.notes)).toEqual([]);
    expect(rows(result)).toEqual([
      'order notes-ok → security-finding: 6 hold=3 notes-ok=2 window=1',
      'order security-finding → notes-ok: 6 hold=4 notes-ok=2 window=0',
      'timing before: 4 hold=3 notes-ok=0 window=1',
      'timing during: 4 hold=2 notes-ok=2 window=0',
      'timing after: 4 hold=2 notes-ok=2 window=0',
      'count 1: 6 hold=3 notes-ok=2 window=1',
      'count 2: 6 hold=4 notes-ok=2 window=0',
      'mode associative: 12 hold=7 notes-ok=4 window=1',
      'all all: 12 hold=7 notes-ok=4 window=1',
    ]);
  });
});

describe('experiment files', () => {
  it('refuses what is not an experiment, naming the field', () => {
    const good = JSON.parse(JSON.stringify(CI)) as Record<string, unknown>;
    for (const [bad, fault] of [
      [[], /not a JSON object/],
      [{ ...good, name: '' }, /name is required/],
      [{ ...good, base: {} }, /base is/],
      [{ ...good, timeline: [{ send: 'x' }] }, /at least one \{slot\}/],
      [{ ...good, timeline: [{ answer: 'x' }, { slot: 'a' }] }, /timeline\[0\]: an answer step needs its text/],
      [{ ...good, events: { kind: 'other', on: 'x', items: [] } }, /events needs kind/],
      [{ ...good, factors: { timing: ['never'] } }, /must name slots of the timeline/],
      [{ ...good, factors: { count: [3] } }, /from 1 to 2/],
      [{ ...good, factors: { order: { permutations: 0 } } }, /factors.order/],
      [{ ...CHILD, factors: { mode: ['threaded'] } }, /subscription events only/],
      [{ ...good, classes: { x: '(' } }, /classes.x: not a regular expression \(Invalid regular expression/],
      // A name is a slug: it names threads and the CLI's temporary folder (issue 38, finding 9b).
      [{ ...good, name: '../../escape' }, /name must be 1 to 64 letters, digits/],
      [{ ...good, name: 'a/../../escape' }, /name must be/],
      [{ ...good, name: 'a\\b' }, /name must be/],
      [{ ...good, name: '.hidden' }, /name must be/],
      [{ ...good, name: 'x'.repeat(65) }, /name must be/],
      [{ ...good, name: 'ok name' }, /name must be/],
      // Classes: bounded, and compiled with the reason (finding 9c).
      [{ ...good, classes: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`c${i}`, 'x'])) }, /at most 64/],
      [{ ...good, classes: { long: 'a'.repeat(1001) } }, /classes.long: a pattern of 1001 characters/],
      [{ ...good, classes: { '': 'x' } }, /a class name is 1 to 64 characters/],
      [{ ...good, classes: { x: 1 } }, /classes maps a class name to a pattern/],
    ] as const) {
      expect(() => parseExperiment(bad, 'bad.json')).toThrow(ExperimentFileError);
      expect(() => parseExperiment(bad, 'bad.json')).toThrow(fault);
    }
  });

  it('takes names as slugs: letters, digits, dot, underscore, dash, up to 64', () => {
    for (const name of ['ci-events-race-question', 'a', 'A.b_c-1', 'x'.repeat(64)])
      expect(parseExperiment({ ...CI, name }, 'ok.json').name).toBe(name);
  });

  it('classes texts by the first matching pattern, and stops a pattern that backtracks catastrophically', () => {
    const final = (text: string) => [{ kind: 'assistant' as const, text }];
    expect(decisionOf(final('You may DEPLOY now'), { wait: 'wait', deploy: 'deploy' }).label).toBe('text:deploy');
    expect(decisionOf(final('no idea'), { deploy: 'deploy' }).label).toBe('text:other');
    // `(a+)+$` over 40 a's and a mismatch: 2^40 paths without the time limit.
    const started = Date.now();
    expect(() => decisionOf(final(`${'a'.repeat(40)}!`), { fine: 'b', slow: '^(a+)+$' })).toThrow(
      /classes.slow: the pattern ran over 1000 ms on a text of 41 characters/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    // A file not read by parseExperiment: its pattern fails with the same typed error.
    expect(() => decisionOf(final('x'), { broken: '(' })).toThrow(ExperimentFileError);
    expect(() => decisionOf(final('x'), { broken: '(' })).toThrow(/classes.broken: not a regular expression/);
  });

  it('orders: permutations up to a cap, and seeded samples that repeat', () => {
    expect(permutations(['a', 'b', 'c'], 4).map((p) => p.join(''))).toEqual(['abc', 'acb', 'bac', 'bca']);
    const s = sampledOrders(['a', 'b', 'c', 'd'], 3, 7).map((p) => p.join(''));
    expect(s).toHaveLength(3);
    expect(new Set(s).size).toBe(3);
    expect(sampledOrders(['a', 'b', 'c', 'd'], 3, 7).map((p) => p.join(''))).toEqual(s);
    expect(sampledOrders(['a', 'b'], 5, 1)).toHaveLength(2);
  });
});

describe('CLI', () => {
  it('experiment run: a worker of its own on the given server, every variant, the table as JSON; bad input exits 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'experiment-cli-'));
    const file = join(dir, 'ping.json');
    writeFileSync(
      file,
      JSON.stringify({
        name: 'ping',
        tools: [{ name: 'ping', description: 'subscribe to pings' }],
        base: { steps: [{ send: 'hello' }] },
        timeline: [{ answer: 'ping', text: 'subscribed', subscription: true }, { slot: 'now' }],
        events: {
          kind: 'subscription',
          on: 'ping',
          items: [
            { label: 'a', text: 'ping a' },
            { label: 'b', text: 'ping b' },
          ],
        },
        factors: { order: { permutations: 2 } },
      }),
    );
    const cli = cliRunner(() => ['--address', inject('temporalAddress'), '--data-dir', dir], {});
    const res = await cli.run('experiment', 'run', file, '--model', 'simulated', '--repeat', '2', '--json');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout) as ExperimentResult & { model: string };
    expect(out.model).toBe('simulated');
    expect(out.variants.map((v) => [v.variant.order.join(''), v.repetition, v.notes])).toEqual([
      ['ab', 0, []],
      ['ba', 0, []],
      ['ab', 1, []],
      ['ba', 1, []],
    ]);
    expect(out.table.factors.all.all!.n).toBe(4);
    // The simulated model answers every event in text: each run ends on text.
    expect(out.table.decisions).toEqual(['text:other']);

    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"name": "x"');
    for (const [args, message] of [
      [['experiment', 'run', bad, '--model', 'simulated'], /bad\.json: not JSON/],
      [['experiment', 'run', file, '--model', 'simulated', '--repeat', '0'], /--repeat must be/],
      [['experiment', 'run', file, '--model', 'simulated', '--concurrency', 'x'], /--concurrency must be/],
      [['experiment', 'run', join(dir, 'none.json'), '--model', 'simulated'], /cannot read/],
    ] as const) {
      const r = await cli.run(...args);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
  });

  it('refuses a name that would put its temporary folder elsewhere, and creates nothing there', async () => {
    // `experiment-<name>-` under the temporary folder: `a/../../x` climbs out of it (issue 38, finding 9b).
    const escape = `escape-${randomUUID().slice(0, 8)}`;
    const dir = mkdtempSync(join(tmpdir(), 'experiment-name-'));
    const file = join(dir, 'climb.json');
    writeFileSync(
      file,
      JSON.stringify({ ...JSON.parse(JSON.stringify(CI)), name: `a/../../${escape}`, base: { thread: 'none' } }),
    );
    const cli = cliRunner(() => ['--address', inject('temporalAddress')], {});
    const r = await cli.run('experiment', 'run', file, '--model', 'simulated');
    const around = [tmpdir(), dirname(tmpdir())].flatMap((d) => readdirSync(d));
    expect(around.filter((e) => e.startsWith(escape))).toEqual([]);
    expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(/climb\.json: name must be/)]);
  });
});
