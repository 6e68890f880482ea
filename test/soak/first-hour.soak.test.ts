/**
 * A new user's first hour, in the README's order, from the packed package installed into an empty project with npm
 * as a user installs it (issue 30): the `Use` example type-checks against the published types and runs to its end,
 * quietly; `dev --answer-by-hand` prints its task queue and tools, and the CLI and Temporal-CLI recipes run next to it
 * in other processes as the README writes them (the CLI's threads titled and sent by kind, a hand delivery accepted);
 * a custom TypeScript tool module drives the simulated model; usage errors exit 2; one Ctrl-C stops an app built on
 * `startLocalSystem`, dev server included.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findTemporalCli } from '../../src/devserver/cli';
import { SimulatedModel } from '../../src/model/simulated';
import type { ThreadEvent, ThreadStatus } from '../../src/core/types';
import { lines } from '../cli-process';
import { eventually, startTestSystem } from '../helpers';
import { packedTarball, repositoryRoot } from '../packed';

const run = promisify(execFile);
const app = join(inject('scratchDir'), 'first-hour-app');
const installedBin = join(app, 'node_modules', 'infinity-temporal', 'bin', 'infinity-temporal.cjs');
const temporalCli = findTemporalCli();
/** As a user's shell has it: `temporal` on PATH, no colours. */
const env = {
  ...process.env,
  NO_COLOR: '1',
  TEMPORAL_CLI: temporalCli,
  PATH: `${dirname(temporalCli)}:${process.env.PATH}`,
};
let installLog = '';

/** The README's first code block of a section. */
function readmeBlock(section: string, lang: string): string {
  const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');
  const body = readme.split(`\n## ${section}\n`)[1]!.split('\n## ')[0]!;
  return new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(body)![1]!;
}

/** The installed command, run in the user's project to its end. */
async function cli(...args: string[]) {
  return run(process.execPath, [installedBin, ...args], { cwd: app, env, maxBuffer: 16 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );

beforeAll(async () => {
  const { tarball } = await packedTarball();
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'first-hour-app', private: true }));
  const installed = await run(
    'npm',
    ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'warn'],
    { cwd: app, env, maxBuffer: 16 << 20 },
  );
  installLog = installed.stdout + installed.stderr;
  // `npm install --save-dev tsx`, as the README asks; this repository's copy stands in for the download.
  symlinkSync(join(repositoryRoot, 'node_modules', 'tsx'), join(app, 'node_modules', 'tsx'), 'dir');
}, 400_000);

describe("a new user's first hour, from the packed package", () => {
  it('installs on this Node without an engine warning', () => {
    expect(installLog).not.toMatch(/EBADENGINE/);
  });

  it('runs the README `Use` example as copied: it type-checks, prints the tool round trip quietly, and ends', async () => {
    const example = readFileSync(join(repositoryRoot, 'examples', 'first-hour', 'agent.mts'), 'utf8');
    expect(readmeBlock('Use', 'ts')).toBe(example);
    writeFileSync(join(app, 'agent.mts'), example);
    // The published types, as a user's strict project checks them (skipLibCheck off: they must need nothing else).
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'nodenext', strict: true, noEmit: true, skipLibCheck: false },
        files: ['agent.mts'],
      }),
    );
    const tsc = join(repositoryRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', app], { cwd: app, env }).catch(
      (e: { stdout: string }) => e,
    );
    expect(checked.stdout.split('\n').filter((l) => l.includes('node_modules/infinity-temporal/'))).toEqual([]);

    const { stdout, stderr } = await run(
      process.execPath,
      [join(app, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'agent.mts'],
      {
        cwd: app,
        env,
        timeout: 120_000,
      },
    );
    // "prints the tool call and its result" (README): the call too, though the thread started before the loop.
    expect(stdout).toMatch(/→ get_build_status \{"build_id":"42"\}/);
    expect(stdout).toContain('← Build 42: green');
    expect(stdout).toContain('idle after 2 slices: user, assistant, tool_call, tool_result, assistant');
    // Temporal's own INFO logs (worker states, the workflow bundle) stay out of the user's terminal.
    expect(`${stdout}${stderr}`).not.toMatch(/\[INFO\]|Worker state changed|webpack/);
  }, 150_000);

  describe('`dev --answer-by-hand` and the recipes from another terminal', () => {
    let dev: ChildProcess;
    const banner: string[] = [];
    let address = '';
    let connection: Connection;
    let temporal: Client;

    beforeAll(async () => {
      dev = spawn(process.execPath, [installedBin, 'dev', '--answer-by-hand'], {
        cwd: app,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      dev.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      for await (const line of lines(dev)) {
        banner.push(line);
        if (line.startsWith('export TEMPORAL_ADDRESS=')) break;
      }
      address = /^export TEMPORAL_ADDRESS=(\S+)$/.exec(banner.at(-1) ?? '')?.[1] ?? '';
      if (!address) throw new Error(`dev did not start:\n${banner.join('\n')}\n${stderr}`);
      connection = await Connection.connect({ address });
      temporal = new Client({ connection });
    }, 120_000);
    afterAll(async () => {
      await connection?.close();
      if (dev && dev.exitCode === null) {
        const done = exited(dev);
        dev.kill('SIGINT');
        await done;
      }
    });

    it('prints its task queue and tools', () => {
      expect(banner).toContain('Task queue       infinity-agents');
      expect(banner).toContain('Tools            get_build_status');
    });

    it('starts threads from the CLI that read like its own, and takes a hand delivery', async () => {
      // (`demo` is the `Use` example's thread, in the same data directory: a new thread here.)
      expect((await cli('send', 'cli-demo', 'Is build 42 green?')).code).toBe(0);
      // `status` names the call the demo tool left pending: "waiting for get_build_status (<id>)".
      const call = await eventually(
        async () => /waiting for get_build_status \((\S+)\)/.exec((await cli('status', 'cli-demo')).stdout)?.[1],
      );
      const delivered = await cli('deliver', 'cli-demo', '--call', call, '--text', 'green');
      expect(delivered).toMatchObject({ code: 0, stdout: expect.stringMatching(/^accepted /) });
      const settled = JSON.parse((await cli('status', 'cli-demo', '--json')).stdout) as ThreadStatus;
      expect(settled.dropped).toEqual({});

      // The UI's Title column and a signal whose payload leads with the text (issue 30 item 1).
      const handle = temporal.workflow.getHandle('cli-demo');
      expect((await handle.describe()).searchAttributes.Title).toEqual(['Is build 42 green?']);
      const signals = ((await handle.fetchHistory()).events ?? []).flatMap(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? [],
      );
      // (`deliver` waits for the thread's answer: an update, not a signal.)
      expect(signals[0]).toBe('user_text');
    });

    it('runs the README Temporal-CLI recipes for a hand-delivered result as written', async () => {
      const section = readFileSync(join(repositoryRoot, 'docs', 'temporal-cli.md'), 'utf8')
        .split('\n## From the Temporal CLI\n')[1]!
        .split('\n## ')[0]!;
      const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
      const block = (start: string) => blocks.find((b) => b.startsWith(`# ${start}`))!;
      const shell = { ...env, TEMPORAL_ADDRESS: address, TQ: 'infinity-agents', THREAD: 'by-hand' };
      const bash = (script: string, extra: Record<string, string> = {}) =>
        run('bash', ['-euo', 'pipefail', '-c', script], { cwd: app, env: { ...shell, ...extra } });
      await bash(block('new thread with user text'));
      const waited = (await bash(block('wait for idle'))).stdout;
      // The CLI prints each result as `QueryResult  <json>`; the status query's is the last.
      const results = [...waited.matchAll(/^\s*QueryResult\s+(.*)$/gm)].map((m) => JSON.parse(m[1]!) as ThreadStatus);
      const call = results.at(-1)?.pendingCall?.id;
      expect(call, waited).toBeDefined();
      await bash(block('the result of the pending tool call'), { CALL: call! });
      const thread = await eventually(async () => {
        const s = JSON.parse((await cli('status', 'by-hand', '--json')).stdout) as ThreadStatus;
        return s.status === 'idle' && s.pendingCall === null ? s : undefined;
      });
      expect(thread.dropped).toEqual({});
      const history = (await cli('history', 'by-hand', '--json')).stdout;
      expect(history).toContain('"kind":"tool_result"');
      expect(history).toContain('"text":"green"');
    });

    it('serves a custom TypeScript tool module to the simulated model', async () => {
      writeFileSync(
        join(app, 'my-tools.ts'),
        [
          "import { defineTool, toolResult } from 'infinity-temporal';",
          'export const tools = [',
          '  defineTool<{ city: string }>({',
          "    name: 'get_weather',",
          "    description: 'The weather in a city',",
          "    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },",
          '    execute(args, ctx) {',
          '      setTimeout(() => void ctx.send(toolResult(ctx, `Sunny in ${args.city}`)), 100);',
          '    },',
          '  }),',
          '];',
          '',
        ].join('\n'),
      );
      const worker = spawn(
        process.execPath,
        [installedBin, 'worker', '--task-queue', 'custom', '--model', 'simulated', '--tools', 'my-tools.ts'],
        { cwd: app, env: { ...env, TEMPORAL_ADDRESS: address }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      worker.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        const ready = await (async () => {
          for await (const line of lines(worker)) if (line.startsWith('worker ready')) return line;
          return undefined;
        })();
        expect(ready, stderr).toBeDefined();
        const q = ['--address', address, '--task-queue', 'custom'];
        expect((await cli(...q, 'send', 'weather', 'Weather in Paris?')).code).toBe(0);
        const history = await eventually(async () => {
          const h = (await cli(...q, 'history', 'weather')).stdout;
          return h.includes('Sunny in') && /assistant/.test(h.split('Sunny in')[1]!) ? h : undefined;
        });
        expect(history).toContain('get_weather');
      } finally {
        const done = exited(worker);
        worker.kill('SIGTERM');
        await done;
      }
    }, 90_000);

    it('answers an unknown command and a missing argument with exit 2', async () => {
      expect((await cli('no-such-command')).code).toBe(2);
      expect((await cli('send')).code).toBe(2);
      expect((await cli('--help')).code).toBe(0);
    });
  });

  it('stops a startLocalSystem app, dev server included, on one Ctrl-C', async () => {
    writeFileSync(
      join(app, 'serve.mjs'),
      [
        "import { startLocalSystem } from 'infinity-temporal';",
        "const system = await startLocalSystem({ dataDir: '.temporal/serve' });",
        'console.log(`ready ${system.devServer.address}`);',
        'setInterval(() => {}, 60_000); // an app that stays up',
        '',
      ].join('\n'),
    );
    const child = spawn(process.execPath, ['serve.mjs'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const done = exited(child);
    let address = '';
    for await (const line of lines(child)) {
      if (line.startsWith('ready ')) {
        address = line.slice('ready '.length);
        break;
      }
    }
    expect(address).not.toBe('');
    child.kill('SIGINT');
    expect(await done).toEqual({ code: null, signal: 'SIGINT' });
    const [host, port] = [
      address.slice(0, address.lastIndexOf(':')),
      Number(address.slice(address.lastIndexOf(':') + 1)),
    ];
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, host);
      socket.once('connect', () => resolve(!!socket.destroy() && false));
      socket.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  }, 90_000);

  it('shows a call of a tool the worker lacks as a live tool_call and its error', async () => {
    const sys = await startTestSystem({ model: new SimulatedModel({ toolName: 'not_a_tool', completionBytes: 100 }) });
    try {
      const threadId = `unknown-${Date.now()}`;
      await sys.client.sendUserText(threadId, 'hello');
      await sys.client.thread(threadId).waitForIdle();
      const mine = sys.seen.filter((e): e is ThreadEvent => e.threadId === threadId);
      expect(mine).toContainEqual(expect.objectContaining({ type: 'tool_call', name: 'not_a_tool' }));
      expect(mine).toContainEqual(
        expect.objectContaining({ type: 'tool_result', text: "Error: tool 'not_a_tool' does not exist" }),
      );
    } finally {
      await sys.shutdown();
    }
  });
});
