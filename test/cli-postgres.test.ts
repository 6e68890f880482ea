/**
 * The CLI on a PostgreSQL store: a `worker` process and `send` / `history` processes sharing one database through
 * `--store postgres://…` — a text large enough to be staged travels through it — and `backup` pointing to pg_dump.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { HistoryItem, ThreadStatus } from '../src/core/types';
import { cliRunner, jsonLines, waitForLine } from './cli-process';
import { eventually } from './helpers';
import { createTestDatabase, queryOnce } from './postgres';

const taskQueue = `cli-pg-${randomUUID()}`;
let url = '';
let worker: ChildProcess;
const { start, run: cli } = cliRunner(
  () => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', url],
  { INFINITY_SIMULATED_DELAY_MS: '10' },
);

beforeAll(async () => {
  url = await createTestDatabase('cli');
  worker = start([
    'worker',
    '--model',
    'simulated',
    '--tools',
    join(__dirname, 'fixtures', 'cli-tools.ts'),
    '--no-events',
  ]);
  expect(await waitForLine(worker, /^store (\S+)$/)).toBe(url);
}, 60_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await new Promise((r) => worker?.once('close', r));
});

it('sends a staged text, runs the thread on the worker, and reads its history from the database', async () => {
  const threadId = `cli-pg-${randomUUID().slice(0, 8)}`;
  // ~420 KB: over 256 KiB, what a client without a store may send, so it can only arrive staged in the database.
  const text = `Is build 42 green?\n${'ünïcødé log line\n'.repeat(20_000)}`;
  const file = join(inject('scratchDir'), `${threadId}.txt`);
  writeFileSync(file, text);
  expect((await cli('send', threadId, '--file', file)).code).toBe(0);
  await eventually(
    async () => {
      const s = JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus;
      return s.status === 'idle' && s.historyLength === 5;
    },
    60_000,
    'the thread idle after its tool round trip',
  );
  const history = jsonLines<HistoryItem>((await cli('history', threadId, '--json')).stdout);
  expect(history.map((h) => h.kind)).toEqual(['user', 'assistant', 'tool_call', 'tool_result', 'assistant']);
  expect(history[0]).toEqual({ kind: 'user', text }); // every byte, and the staged copy consumed by the commit
  expect(history[2]).toMatchObject({ name: 'get_build_status', args: { build_id: '42' } });
  expect(history[3]).toMatchObject({ content: [{ type: 'text', text: 'Build 42: green (all 318 tests passed)' }] });
  expect(
    await queryOnce(
      url,
      'SELECT (SELECT count(*)::int FROM items WHERE thread_id = $1) AS items, (SELECT count(*)::int FROM staged_inputs) AS staged',
      [threadId],
    ),
  ).toEqual([{ items: 5, staged: 0 }]);
});

it('points backup of a PostgreSQL store to pg_dump', async () => {
  const backup = await cli('backup', join(inject('scratchDir'), 'never.sqlite'));
  expect(backup.code).toBe(2);
  expect(backup.stderr).toContain('is a PostgreSQL database: back it up with pg_dump');
});
