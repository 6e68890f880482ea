/**
 * The npm package as `npm pack` makes it (`prepack` builds it), made once per test run and shared by the test files
 * that need it (test/package.test.ts, test/soak/first-hour.soak.test.ts), which may run at the same time in other processes.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { inject } from 'vitest';

const run = promisify(execFile);
export const repositoryRoot = join(__dirname, '..');

export interface Packed {
  /** The tarball's path. */
  tarball: string;
  /** The paths it holds, as `npm pack --json` lists them. */
  files: string[];
}

/** Packs the repository once per run (in the run's scratch directory); later callers, in any process, reuse it. */
export async function packedTarball(): Promise<Packed> {
  const dir = join(inject('scratchDir'), 'npm-pack');
  const done = join(dir, 'packed.json');
  const lock = join(dir, 'lock');
  mkdirSync(dir, { recursive: true });
  const failed = join(dir, 'failed.txt');
  for (;;) {
    if (existsSync(done)) return JSON.parse(readFileSync(done, 'utf8')) as Packed;
    if (existsSync(failed)) throw new Error(`npm pack failed: ${readFileSync(failed, 'utf8')}`);
    try {
      mkdirSync(lock); // the one process that packs
      break;
    } catch {
      await sleep(500); // another process is packing
    }
  }
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: repositoryRoot,
    maxBuffer: 64 << 20,
  }).catch((e: unknown) => {
    const { stdout: out = '', message } = e as { stdout?: string; message: string };
    writeFileSync(failed, `${message}\n${out.slice(-4000)}`);
    throw e;
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  const result: Packed = { tarball: join(dir, packed!.filename), files: packed!.files.map((f) => f.path) };
  writeFileSync(done, JSON.stringify(result));
  return result;
}
