/**
 * The CLI binary, spawned as real processes against the suite's dev server: a `worker` process serving threads and
 * live events, and the client commands in other processes, including `tail` following tokens live and resuming
 * after a kill without dropping or repeating an event.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { HistoryItem, ThreadStatus } from '../src/core/types';
import type { LiveEvent } from '../src/events/live-events';
import { cliRunner, jsonLines, lines, waitForLine } from './cli-process';
import { eventually } from './helpers';
import { itemLine, transcript } from './transcript';
import type { Followed } from '../src/client/follow';

const taskQueue = `cli-${randomUUID()}`;
const store = join(inject('scratchDir'), `cli-${randomUUID()}.sqlite`);
let eventsUrl = '';
let worker: ChildProcess;

const runner = cliRunner(
  () => [
    '--address',
    inject('temporalAddress'),
    '--task-queue',
    taskQueue,
    '--store',
    store,
    ...(eventsUrl ? ['--events-url', eventsUrl] : []),
  ],
  { INFINITY_SIMULATED_DELAY_MS: '10' },
);
const start = runner.start;
const cli = runner.run;
const json = jsonLines;

beforeAll(async () => {
  worker = start(['worker', '--model', 'simulated', '--tools', join(__dirname, 'fixtures', 'cli-tools.ts')]);
  eventsUrl = await waitForLine(worker, /^events (\S+)$/);
}, 60_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await new Promise((r) => worker?.once('close', r));
});

describe('infinity-temporal CLI', () => {
  it('has --help on every command', async () => {
    const commands = [
      'dev',
      'worker',
      'gateway',
      'start',
      'send',
      'deliver',
      'answer',
      'history',
      'status',
      'threads',
      'compact',
      'tail',
    ];
    const results = await Promise.all(commands.map((c) => cli(c, '--help')));
    results.forEach((r, i) => {
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: infinity-temporal ${commands[i]}`);
    });
  });

  it('starts a thread, then shows its status, history and listing', async () => {
    const threadId = `cli-${randomUUID().slice(0, 8)}`;
    const started = await cli('start', 'Is build 42 green?', '--thread-id', threadId);
    expect(started).toMatchObject({ code: 0, stdout: `${threadId}\n` });
    const tail = await cli('tail', threadId, '--until-idle');
    expect(tail.code).toBe(0);
    // Committed history first, then live events (how much of each depends on timing).
    expect(tail.stdout).toMatch(/(call|→) get_build_status \{"build_id":"42"\}/);
    expect(tail.stdout).toMatch(/(result \(\S+\)|←):? Build 42: green \(all 318 tests passed\)/);

    const status = await cli('status', threadId, '--json');
    expect(JSON.parse(status.stdout) as ThreadStatus).toMatchObject({
      threadId,
      status: 'idle',
      historyLength: 5,
      slices: 2,
      pendingCall: null,
    });
    const history = json<HistoryItem>((await cli('history', threadId, '--json')).stdout);
    expect(history.map((h) => h.kind)).toEqual(['user', 'assistant', 'tool_call', 'tool_result', 'assistant']);
    expect(history[3]).toMatchObject({
      kind: 'tool_result',
      content: [{ type: 'text', text: 'Build 42: green (all 318 tests passed)' }],
    });
    const listed = json<{ threadId: string; status: string; kind: string }>((await cli('threads', '--json')).stdout);
    expect(listed).toContainEqual(expect.objectContaining({ threadId, kind: 'root' }));
    const plain = await cli('status', threadId);
    expect(plain.stdout.split('\n')[0]).toBe(`${threadId} root idle`);
  });

  it('shows the control characters and escape sequences of threads instead of sending them to the terminal', async () => {
    // Window title, clear screen, clipboard (OSC 52), a C1 CSI, a right-to-left override: in a text and in a thread id.
    const hostile = 'Is build 42 green? \x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\u009b2J\u202eevil';
    const threadId = `esc-${randomUUID().slice(0, 8)}-\x1b]2;id\x07`;
    expect(await cli('start', hostile, '--thread-id', threadId)).toMatchObject({ code: 0 });
    const outputs = {
      tail: await cli('tail', threadId, '--until-idle'),
      history: await cli('history', threadId),
      full: await cli('history', threadId, '--full'),
      status: await cli('status', threadId),
      threads: await cli('threads'),
      unknown: await cli('status', `no-such-\x1b]0;pwned\x07`),
    };
    // eslint-disable-next-line no-control-regex
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    for (const [command, r] of Object.entries(outputs)) {
      expect({ command, stdout: raw.test(r.stdout), stderr: raw.test(r.stderr) }).toEqual({
        command,
        stdout: false,
        stderr: false,
      });
    }
    for (const shown of [outputs.tail.stdout, outputs.history.stdout, outputs.full.stdout])
      expect(shown).toContain('user: Is build 42 green? \\u001b]0;pwned\\u0007\\u001b[2J\\u001b]52;c;cHduZWQ=');
    expect(outputs.history.stdout).toContain('\\u009b2J\\u202eevil');
    expect(outputs.status.stdout.split('\n')[0]).toBe(`esc-${threadId.slice(4, 12)}-\\u001b]2;id\\u0007 root idle`);
    expect(outputs.unknown).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('no-such-\\u001b]0;pwned\\u0007'),
    });
    // JSON is exact data: the same text back.
    const history = json<HistoryItem>((await cli('history', threadId, '--json')).stdout);
    expect(history[0]).toMatchObject({ kind: 'user', text: hostile });
    expect((JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus).threadId).toBe(threadId);
  });

  it('tails joined at any moment of a run show every committed item once', async () => {
    // Each tail subscribes, then reads the history: a turn that commits in between is shown once, and a turn running
    // when it attaches is shown with its inputs (a tail that attached there lost the tool result, CI of 0.11).
    const threadId = `joined-${randomUUID().slice(0, 8)}`;
    expect(await cli('start', 'Is build 7 green?', '--thread-id', threadId)).toMatchObject({ code: 0 });
    const tails: Promise<{ code: number | null; stdout: string }>[] = [];
    for (let i = 0; i < 5; i++) {
      tails.push(cli('tail', threadId, '--json', '--until-idle'));
      await new Promise((r) => setTimeout(r, 80));
    }
    const outputs = await Promise.all(tails);
    const history = json<HistoryItem>((await cli('history', threadId, '--json')).stdout);
    const expected = history.map(itemLine).filter((l) => l !== undefined);
    expect(expected.length).toBeGreaterThanOrEqual(5);
    outputs.forEach((out, i) => {
      expect(out.code, `tail ${i}`).toBe(0);
      expect(transcript(json<Followed>(out.stdout)), `tail ${i}`).toEqual(expected);
    });
  });

  it("tails a fork live: its source's items first, marked inherited, then its own once", async () => {
    const source = `tsrc-${randomUUID().slice(0, 8)}`;
    expect(await cli('start', 'Is build 42 green?', '--thread-id', source)).toMatchObject({ code: 0 });
    expect((await cli('tail', source, '--until-idle')).code).toBe(0);
    const sourceItems = json<HistoryItem>((await cli('history', source, '--json')).stdout);
    const fork = `tfork-${randomUUID().slice(0, 8)}`;
    expect((await cli('fork', source, '--at', 'now', '--as', fork)).code).toBe(0);
    // Attached before the fork has items of its own: what it inherits, then its own items and live events (follow).
    const follower = start(['tail', fork, '--json']);
    const got: (Followed & { inheritedFrom?: string })[] = [];
    const reading = (async () => {
      for await (const l of lines(follower)) got.push(JSON.parse(l) as Followed & { inheritedFrom?: string });
    })();
    const n = sourceItems.length;
    await expect.poll(() => got.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(n);
    expect(got.slice(0, n)).toEqual(sourceItems.map((item) => ({ history: item, inheritedFrom: source })));
    expect((await cli('send', fork, 'Is build 43 green?')).code).toBe(0);
    expect((await cli('tail', fork, '--until-idle')).code).toBe(0);
    const own = json<HistoryItem>((await cli('history', fork, '--own', '--json')).stdout);
    expect(own[0]).toEqual({ kind: 'user', text: 'Is build 43 green?' });
    const expected = own.map(itemLine).filter((l) => l !== undefined);
    await expect.poll(() => transcript(got.slice(n)), { timeout: 30_000 }).toEqual(expected);
    follower.kill('SIGTERM');
    await reading;
    expect(got.slice(n).filter((s) => 'inheritedFrom' in s)).toEqual([]);
  });

  it('tails tokens live from another process and resumes after a kill without drops or repeats', async () => {
    const threadId = `tail-${randomUUID().slice(0, 8)}`;
    await cli('start', '--thread-id', threadId);
    // An observer that sees everything, and a follower we kill halfway through the first completion. Both start from
    // the beginning of the worker's log (`--after <epoch>.0`), so it does not matter when their processes attach.
    const { epoch } = (await (await fetch(`${eventsUrl}/health`)).json()) as { epoch: string };
    const observer = start(['tail', threadId, '--json', '--after', `${epoch}.0`]);
    const follower = start(['tail', threadId, '--json', '--after', `${epoch}.0`]);
    const observed: LiveEvent[] = [];
    const observing = (async () => {
      for await (const l of lines(observer)) observed.push(JSON.parse(l) as LiveEvent);
    })();
    expect((await cli('send', threadId, 'Is build 42 green?')).code).toBe(0);

    const before: LiveEvent[] = [];
    for await (const l of lines(follower)) {
      before.push(JSON.parse(l) as LiveEvent);
      if (before.filter((e) => e.type === 'text_delta').length === 5) break;
    }
    follower.kill('SIGKILL');
    const resumed = await cli('tail', threadId, '--json', '--after', before.at(-1)!.eventId!, '--until-idle');
    expect(resumed.code).toBe(0);
    const after = json<LiveEvent>(resumed.stdout);
    const joined = [...before, ...after];
    await expect.poll(() => observed.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(joined.length);
    observer.kill('SIGTERM');
    await observing;
    expect(joined.map((e) => e.eventId)).toEqual(observed.map((e) => e.eventId));
    expect(new Set(joined.map((e) => e.eventId)).size).toBe(joined.length);
    // Tokens arrived in order: each completion's deltas spell out the committed assistant text.
    const texts: string[] = [];
    for (const e of observed) {
      if (e.type === 'completion_started') texts.push('');
      if (e.type === 'text_delta') texts[texts.length - 1] += e.text;
    }
    const committed = json<HistoryItem>((await cli('history', threadId, '--json')).stdout).filter(
      (h) => h.kind === 'assistant',
    );
    expect(texts).toEqual(committed.map((h) => (h as { text: string }).text));
    expect(observed.filter((e) => e.type === 'text_delta').length).toBeGreaterThan(20);
  });

  it('delivers inputs, compacts, and fails clearly on bad targets', async () => {
    const threadId = `deliver-${randomUUID().slice(0, 8)}`;
    await cli('start', 'Is build 7 green?', '--thread-id', threadId);
    await cli('tail', threadId, '--until-idle');
    // Acknowledged by default: the thread's answer, not "signalled", decides the exit code.
    const stale = await cli('deliver', threadId, '--call', 'no-such-call', '--text', 'late');
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain(`thread ${threadId} dropped the input: wrong_call`);
    expect((JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus).dropped.wrong_call).toBe(1);
    // --wait says the default out loud; with --no-ack it is a usage error.
    const waited = await cli(
      'deliver',
      threadId,
      '--call',
      'no-such-call',
      '--text',
      'late',
      '--id',
      'late-2',
      '--wait',
    );
    expect(waited.code).toBe(2);
    expect(waited.stderr).toContain(`thread ${threadId} dropped the input: wrong_call`);
    const both = await cli('deliver', threadId, '--call', 'c', '--text', 'x', '--wait', '--no-ack');
    expect(both).toMatchObject({ code: 2, stderr: expect.stringContaining('give --wait or --no-ack, not both') });
    // Unacknowledged, the same input is only signalled: exit 0, and the thread drops it all the same.
    const signalled = await cli('deliver', threadId, '--call', 'no-such-call', '--text', 'later', '--no-ack');
    expect(signalled).toMatchObject({ code: 0, stdout: expect.stringMatching(/^delivered /) });
    await eventually(
      async () =>
        (JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus).dropped.wrong_call === 3 ||
        undefined,
    );

    expect((await cli('compact', threadId)).code).toBe(0);
    const compacted = await eventually(async () => {
      const s = JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus;
      return s.compaction.completed === 1 ? s : undefined;
    }, 60_000);
    expect(compacted.children).toHaveLength(1);

    const unknown = await cli('deliver', 'no-such-thread', '--call', 'c', '--text', 'x');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no-such-thread/);
    const missing = await cli('status', 'no-such-thread');
    expect(missing.code).toBe(2);
    const usage = await cli('deliver', threadId, '--text', 'no call');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('deliver needs --call and --text');
  });

  it('answers every usage error with exit 2 and one clear line', async () => {
    const threadId = `usage-${randomUUID().slice(0, 8)}`;
    await cli('start', 'Is build 9 green?', '--thread-id', threadId);
    const cases: [string[], string][] = [
      [['send', threadId, '   '], 'send needs a non-empty text'],
      [
        ['send', `${threadId}-p`, 'hi', '--priority', '9'],
        'priority must be a whole number from 1 (first) to 5, got 9',
      ],
      [['start', '--fairness-weight', 'heavy'], "--fairness-weight must be a number, got 'heavy'"],
      [
        ['threads', '--status', 'bogus'],
        "--status must be one of idle, running, waiting_tool, failed, closed, over_budget, agent_unavailable; got 'bogus'",
      ],
      [['threads', '--kind', 'nope'], '--kind must be one of root, child, event, compaction'],
      [['tail', threadId, '--after', 'garbage'], "--after takes a live event's eventId"],
      [['answer', threadId, 'no-such-choice'], `thread ${threadId} has no pending choice 'no-such-choice'`],
      [['answer', threadId, 'c1', '1.5'], "index must be a whole number, got '1.5'"],
      [['deliver', threadId, '--message', join(inject('scratchDir'), 'no-such-message.json')], 'cannot read'],
      [['dev', '--port', 'abc'], "--port must be a port number (1-65535), got 'abc'"],
      [['dev', '--no-ui', '--ui-port', '8233'], '--no-ui and --ui-port do not go together'],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('starts a thread with the priority and fairness key it is given', async () => {
    const threadId = `prio-${randomUUID().slice(0, 8)}`;
    const r = await cli(
      'start',
      'hello',
      '--thread-id',
      threadId,
      '--priority',
      '5',
      '--fairness-key',
      'tenant-cli',
      '--fairness-weight',
      '2.5',
    );
    expect(r.code).toBe(0);
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const info = (await new Client({ connection }).workflow.getHandle(threadId).describe()).raw.workflowExecutionInfo;
      expect(info?.priority).toMatchObject({ priorityKey: 5, fairnessKey: 'tenant-cli', fairnessWeight: 2.5 });
    } finally {
      await connection.close();
    }
  });

  it('runs dev without the Web UI when asked', async () => {
    const dev = start([
      'dev',
      '--no-ui',
      '--no-events',
      '--data-dir',
      join(inject('scratchDir'), `dev-${randomUUID()}`),
    ]);
    try {
      const banner: string[] = [];
      for await (const line of lines(dev)) {
        banner.push(line);
        if (line.startsWith('export TEMPORAL_ADDRESS=')) break;
      }
      expect(banner).toContain('Temporal UI      (disabled)');
    } finally {
      dev.kill('SIGTERM');
      await new Promise((r) => dev.once('close', r));
    }
  }, 90_000);

  it('runs dev on the ports it is given and prints the address to export', async () => {
    const free = async () =>
      new Promise<number>((resolve) => {
        const srv = createServer().listen(0, '127.0.0.1', () => {
          const { port } = srv.address() as AddressInfo;
          srv.close(() => resolve(port));
        });
      });
    const [port, uiPort] = [await free(), await free()];
    const dataDir = join(inject('scratchDir'), `dev-${randomUUID()}`);
    // Under a umask that hides nothing, the files dev writes are still its owner's alone.
    const umask = process.umask(0);
    let dev: ChildProcess;
    try {
      dev = start(['dev', '--port', String(port), '--ui-port', String(uiPort), '--data-dir', dataDir, '--no-events']);
    } finally {
      process.umask(umask);
    }
    try {
      // One reader for the whole banner: a second reader would miss lines the first had already buffered.
      const banner: string[] = [];
      for await (const line of lines(dev)) {
        banner.push(line);
        if (line.startsWith('export TEMPORAL_ADDRESS=')) break;
      }
      expect(banner).toContain(`Temporal UI      http://127.0.0.1:${uiPort}`);
      expect(banner).toContain(`Temporal address 127.0.0.1:${port}`);
      expect(banner).toContain(`export TEMPORAL_ADDRESS=127.0.0.1:${port}`);
      // dev.json says where `send` and `tail` go (and `tail` sends the events token there).
      expect(statSync(join(dataDir, 'dev.json')).mode & 0o777).toBe(0o600);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    } finally {
      dev.kill('SIGTERM');
      await new Promise((r) => dev.once('close', r));
    }
  }, 90_000);
});
