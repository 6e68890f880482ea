/** Spawning the CLI binary in tests: one-shot commands, long-running processes, and their output lines. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const BIN = join(__dirname, '..', 'bin', 'infinity-temporal.cjs');
const RUN_DEADLINE_MS = 75_000;

export interface CliRunner {
  /** A running CLI process (`worker`, `tail`, `gateway`...). */
  start(args: string[], extraEnv?: Record<string, string>): ChildProcess;
  /**
   * Runs a command to its end; one still running after 75 s (under the tests' 90 s) is killed, and its output so far
   * comes back with a note on stderr and code -1, so a hang fails with what the command printed and leaves no process.
   */
  run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** `globals()` is read at each spawn, so it can name endpoints learned after the runner was made. */
export function cliRunner(globals: () => string[], env: Record<string, string | undefined>): CliRunner {
  const start = (args: string[], extraEnv: Record<string, string> = {}) =>
    spawn(process.execPath, [BIN, ...globals(), ...args], {
      env: { ...process.env, NO_COLOR: '1', ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  return {
    start,
    async run(...args) {
      const child = start(args);
      // Decoded whole at the end: a chunk may end in the middle of a multi-byte character.
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout!.on('data', (d: Buffer) => out.push(d));
      child.stderr!.on('data', (d: Buffer) => err.push(d));
      const deadline = setTimeout(() => {
        err.push(Buffer.from(`\n[test] killed after ${RUN_DEADLINE_MS} ms: infinity-temporal ${args.join(' ')}\n`));
        child.kill('SIGKILL');
      }, RUN_DEADLINE_MS);
      const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
      clearTimeout(deadline);
      return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
    },
  };
}

/** Lines of a running process's stdout, as they come. */
export function lines(child: ChildProcess): AsyncIterableIterator<string> {
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
}

/** Reads stdout until a line matches; the first group of the match, or an error with what stderr said. */
export async function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  for await (const line of lines(child)) {
    const m = pattern.exec(line);
    if (m) return m[1] ?? line;
  }
  throw new Error(`the process ended before printing ${pattern}:\n${stderr}`);
}

export const jsonLines = <T>(s: string) =>
  s
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
