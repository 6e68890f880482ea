/**
 * `infinity-temporal fork` as a real process against the suite's dev server and a worker process (issue 28 §1): fork
 * at now with --as and --send, the fork's status naming its source and point, its own history, the source untouched;
 * a slice as the point; usage errors.
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
  // Its own history starts with its first text; the source's is as it was.
  const own = jsonLines<HistoryItem>((await cli('history', forkId, '--json')).stdout);
  expect(own[0]).toEqual({ kind: 'user', text: 'second question' });
  expect(jsonLines<HistoryItem>((await cli('history', source, '--json')).stdout)).toEqual(sourceItems);

  const atSlice = await cli('fork', source, '--at', 'slice-0');
  expect(atSlice.code).toBe(0);
  expect(atSlice.stdout).toMatch(new RegExp(`^forked ${source} at item \\d+ as \\S+\\n$`));

  expect((await cli('fork', source)).code).toBe(2);
  const outside = await cli('fork', source, '--at', '999');
  expect(outside.code).toBe(2);
  expect(outside.stderr).toContain('not an item count');
});
