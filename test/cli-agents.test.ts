/**
 * Agents from the CLI (issue 40): a `worker` process hosting a `--tools` module's agents, and the client commands in
 * other processes: `send --agent`, `threads --agent`, `status`, `agent set` for a thread whose agent is gone, and
 * `fork --agent`.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { HistoryItem, ThreadStatus } from '../src/core/types';
import type { ThreadSummary } from '../src/client/listing';
import { cliRunner, jsonLines, waitForLine } from './cli-process';
import { eventually } from './helpers';

const taskQueue = `cli-agents-${randomUUID()}`;
const store = join(inject('scratchDir'), `cli-agents-${randomUUID()}.sqlite`);
let worker: ChildProcess;
let ready = '';

const runner = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store], {
  INFINITY_SIMULATED_DELAY_MS: '10',
});
const cli = runner.run;

beforeAll(async () => {
  worker = runner.start(['worker', '--model', 'simulated', '--tools', join(__dirname, 'fixtures', 'cli-agents.ts')]);
  ready = await waitForLine(worker, /^(agents .*)$/);
}, 60_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await new Promise((r) => worker?.once('close', r));
});

const replies = async (threadId: string) =>
  jsonLines<HistoryItem>((await cli('history', threadId, '--json')).stdout)
    .filter((i) => i.kind === 'assistant')
    .map((i) => (i as { text: string }).text);

const idle = (threadId: string) =>
  eventually(async () => {
    const s = JSON.parse((await cli('status', threadId, '--json')).stdout) as ThreadStatus;
    return s.status === 'idle' ? s : undefined;
  });

describe('agents from the CLI', () => {
  it('hosts the module agents beside the default one', () => {
    expect(ready).toBe('agents default, triage, coder');
  });

  it('sends to a thread of an agent, lists threads by agent, forks onto another agent', async () => {
    const t = `cli-triage-${randomUUID().slice(0, 8)}`;
    expect((await cli('send', t, 'hello', '--agent', 'triage')).code).toBe(0);
    expect((await idle(t)).agent).toBe('triage');
    expect(await replies(t)).toEqual(['triage: hello']);
    const listed = await eventually(async () => {
      const rows = jsonLines<ThreadSummary>((await cli('threads', '--agent', 'triage', '--json')).stdout);
      return rows.some((r) => r.threadId === t) ? rows : undefined;
    });
    expect(listed.every((r) => r.agent === 'triage')).toBe(true);
    const forked = await cli('fork', t, '--at', 'now', '--agent', 'coder', '--send', 'again', '--json');
    expect(forked.code).toBe(0);
    const fork = (JSON.parse(forked.stdout) as { threadId: string }).threadId;
    expect((await idle(fork)).agent).toBe('coder');
    expect(await replies(fork)).toEqual(['triage: hello', 'coder: again']);
  });

  it('shows a thread whose agent is gone, and moves it with agent set', async () => {
    const g = `cli-ghost-${randomUUID().slice(0, 8)}`;
    expect((await cli('send', g, 'anyone?', '--agent', 'ghost')).code).toBe(0);
    const waiting = await eventually(async () => {
      const s = JSON.parse((await cli('status', g, '--json')).stdout) as ThreadStatus;
      return s.status === 'agent_unavailable' ? s : undefined;
    });
    expect(waiting.agentUnavailable?.agent).toBe('ghost');
    const plain = await cli('status', g);
    expect(plain.stdout).toContain('agent ghost');
    expect(plain.stdout).toContain('waiting for agent ghost: no worker defines it');
    const set = await cli('agent', 'set', g, 'coder');
    expect(set).toMatchObject({ code: 0, stdout: `${g}: agent coder from its next slice\n` });
    expect((await idle(g)).agent).toBe('coder');
    expect(await replies(g)).toEqual(['coder: anyone?']);
    const bad = await cli('send', g, 'x', '--agent', 'not a name');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('agent name');
  });
});
