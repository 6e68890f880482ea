/**
 * The RAP pieces as separate processes: a tool server (SDK, in this process), the callback gateway on its own
 * (`infinity-temporal gateway`), a worker (`infinity-temporal worker --rap … --gateway-url …`) sharing the callback
 * keys, and a client (`send`, `history`). The simulated model calls `get_build_status`, which the RAP server provides.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { HistoryItem } from '../../src/core/types';
import { createRapToolServer, type RapToolServer } from '../../src/rap/tool-server';
import { cliRunner, jsonLines, waitForLine } from '../cli-process';
import { eventually } from '../helpers';

const taskQueue = `rap-cli-${randomUUID()}`;
const store = join(inject('scratchDir'), `rap-cli-${randomUUID()}.sqlite`);
const keys = `k2:${randomBytes(32).toString('base64')},k1:${randomBytes(32).toString('base64')}`;
const rapToken = randomBytes(32).toString('hex');
const runner = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', taskQueue, '--store', store], {
  INFINITY_CALLBACK_KEYS: keys,
  // The CLI's `--rap` servers get this bearer token (src/cli/tool-servers.ts), as the SDK's server wants one.
  INFINITY_RAP_TOKEN: rapToken,
});
let toolServer: RapToolServer;
const processes: ChildProcess[] = [];

beforeAll(async () => {
  toolServer = await createRapToolServer({
    name: 'ci',
    token: rapToken,
    tools: [
      {
        name: 'get_build_status',
        description: 'Look up a CI build',
        inputSchema: { type: 'object', properties: { build_id: { type: 'string' } }, required: ['build_id'] },
        handler: async (args) => {
          await new Promise((r) => setTimeout(r, 200));
          return `Build ${String(args.build_id)}: green, from the RAP server`;
        },
      },
    ],
  });
  const gateway = runner.start(['gateway', '--port', '0']);
  processes.push(gateway);
  const gatewayUrl = (await waitForLine(gateway, /^gateway (\S+) /)).trim();
  const worker = runner.start([
    'worker',
    '--model',
    'simulated',
    '--rap',
    toolServer.url,
    '--gateway-url',
    gatewayUrl,
    '--no-events',
  ]);
  processes.push(worker);
  await waitForLine(worker, /^(worker ready)/);
}, 90_000);

afterAll(async () => {
  for (const p of processes) p.kill('SIGTERM');
  await Promise.all(processes.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('close', r)))));
  await toolServer?.close();
});

describe('RAP across processes', () => {
  it('delivers a RAP result through a standalone gateway to a thread served by a CLI worker', async () => {
    const threadId = `rap-cli-${randomUUID().slice(0, 8)}`;
    expect((await runner.run('send', threadId, 'Is build 42 green?')).code).toBe(0);
    const history = await eventually(async () => {
      const r = await runner.run('history', threadId, '--json');
      const items = r.code === 0 ? jsonLines<HistoryItem>(r.stdout) : [];
      return items.length >= 5 ? items : undefined;
    }, 60_000);
    expect(history.map((h) => h.kind)).toEqual(['user', 'assistant', 'tool_call', 'tool_result', 'assistant']);
    expect(history[3]).toMatchObject({
      kind: 'tool_result',
      content: [{ type: 'text', text: 'Build 42: green, from the RAP server' }],
    });
  });
});
