/**
 * `infinity-temporal fork` as a real process against the suite's dev server and a worker process (issue 28 §1): fork
 * at now with --as and --send, the fork's status naming its source and point, its history (the source's items marked
 * inherited, then its own), the source untouched; a slice as the point; usage errors. `rewind` and `history --branch`
 * (issue 28 §2) likewise.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { HistoryItem, ThreadStatus } from '../src/core/types';
import { cliRunner, jsonLines, waitForLine } from './cli-process';

const taskQueue = `fork-cli-${randomUUID()}`;
const store = join(inject('scratchDir'), `fork-cli-${randomUUID()}.sqlite`);
const runner = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store], {
  INFINITY_SIMULATED_DELAY_MS: '1',
});
const cli = runner.run;
let worker: ChildProcess;

beforeAll(async () => {
  worker = runner.start(['worker', '--model', 'simulated']);
  await waitForLine(worker, /^events (\S+)$/);
}, 60_000);
afterAll(async () => {
  worker?.kill('SIGTERM');
  await new Promise((r) => worker?.once('close', r));
});

it('forks a thread at now, with a first text, and at a slice; usage errors exit 2', async () => {
  const source = `src-${randomUUID().slice(0, 8)}`;
  expect((await cli('start', 'first question', '--thread-id', source)).code).toBe(0);
  expect((await cli('tail', source, '--until-idle')).code).toBe(0);
  const sourceItems = jsonLines<HistoryItem>((await cli('history', source, '--json')).stdout);
  expect(sourceItems[0]).toEqual({ kind: 'user', text: 'first question' });

  const forkId = `fork-${randomUUID().slice(0, 8)}`;
  const forked = await cli('fork', source, '--at', 'now', '--as', forkId, '--send', 'second question', '--json');
  expect(forked.stderr).toBe('');
  expect(JSON.parse(forked.stdout)).toEqual({
    threadId: forkId,
    forkedFrom: { threadId: source, at: sourceItems.length },
  });
  expect((await cli('tail', forkId, '--until-idle')).code).toBe(0);
  const status = JSON.parse((await cli('status', forkId, '--json')).stdout) as ThreadStatus;
  expect(status.forkedFrom).toEqual({ threadId: source, at: sourceItems.length });
  expect((await cli('status', forkId)).stdout).toContain(`forked from ${source} at item ${sourceItems.length}`);
  // Its history: the source's items, marked as inherited (issue 42 §2), then its own, which start with its first
  // text (alone with --own); the source's is as it was.
  const whole = jsonLines<HistoryItem & { inheritedFrom?: string }>((await cli('history', forkId, '--json')).stdout);
  expect(whole.slice(0, sourceItems.length)).toEqual(sourceItems.map((i) => ({ ...i, inheritedFrom: source })));
  const own = jsonLines<HistoryItem>((await cli('history', forkId, '--own', '--json')).stdout);
  expect(own[0]).toEqual({ kind: 'user', text: 'second question' });
  expect(whole.slice(sourceItems.length)).toEqual(own);
  expect((await cli('history', forkId)).stdout).toContain(
    `── ${forkId}: its own items (forked from ${source} at item ${sourceItems.length}) ──\nuser: second question\n`,
  );
  expect(jsonLines<HistoryItem>((await cli('history', source, '--json')).stdout)).toEqual(sourceItems);

  const atSlice = await cli('fork', source, '--at', 'slice-0');
  expect(atSlice.code).toBe(0);
  expect(atSlice.stdout).toMatch(new RegExp(`^forked ${source} at item \\d+ as \\S+\\n$`));

  expect((await cli('fork', source)).code).toBe(2);
  const outside = await cli('fork', source, '--at', '999');
  expect(outside.code).toBe(2);
  expect(outside.stderr).toContain('not an item count');
});

it('rewinds a thread to a slice; history shows the visible items and --branch the archived ones; usage errors exit 2', async () => {
  const id = `rw-${randomUUID().slice(0, 8)}`;
  expect((await cli('start', 'first question', '--thread-id', id)).code).toBe(0);
  expect((await cli('tail', id, '--until-idle')).code).toBe(0);
  const first = jsonLines<HistoryItem>((await cli('history', id, '--json')).stdout);
  expect((await cli('send', id, 'second question')).code).toBe(0);
  expect((await cli('tail', id, '--until-idle')).code).toBe(0);
  const before = jsonLines<HistoryItem>((await cli('history', id, '--json')).stdout);
  expect(before.length).toBeGreaterThan(first.length);

  const rewound = await cli('rewind', id, '--to', 'slice-0', '--json');
  expect(rewound.stderr).toBe('');
  expect(JSON.parse(rewound.stdout)).toEqual({
    threadId: id,
    to: first.length,
    branch: 1,
    archived: [first.length, before.length],
  });
  expect(jsonLines<HistoryItem>((await cli('history', id, '--json')).stdout)).toEqual([
    ...first,
    { kind: 'rewind', to: first.length, branch: 1 },
  ]);
  expect(jsonLines<HistoryItem>((await cli('history', id, '--branch', '1', '--json')).stdout)).toEqual(
    before.slice(first.length),
  );
  expect((await cli('history', id)).stdout).toContain(`rewound to item ${first.length}`);

  expect((await cli('rewind', id)).code).toBe(2);
  const inside = await cli('rewind', id, '--to', String(first.length + 1));
  expect(inside.code).toBe(2);
  expect(inside.stderr).toContain('inside branch 1');
  expect((await cli('history', id, '--branch', '2')).code).toBe(2);
  expect((await cli('history', id, '--branch', 'x')).code).toBe(2);
});
