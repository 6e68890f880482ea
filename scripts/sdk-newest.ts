/**
 * Runs the late-resolution probe (`bench/probes/late-resolution/probe.ts`, decisions 79–81) on the newest published
 * Temporal TypeScript SDK, or on any other, without touching the project's node_modules or package.json (issue 39 §4).
 *
 * `npm run sdk:newest -- [newest|pinned|X.Y.Z] [workflows=20] [iterations=10] [query|noquery] [fail|ok] [update]
 *   [--runs N] [--histories DIR]`
 *
 * - `newest` (the default) is the highest release of `@temporalio/worker` on the configured npm registry
 *   (`npm view @temporalio/worker versions`, pre-releases left out); `pinned` is the version package.json pins.
 * - Any version but the pinned one is installed into `.cache/sdk-newest/<version>/` (`@temporalio/worker`, `client`,
 *   `common`, `workflow`, `activity`, `proto` at that exact version, and the protobufjs its `proto` asks for; install
 *   scripts off), once; the probe's folder is copied beside them, so the copy resolves every `@temporalio/*` import to
 *   that SDK. The pinned version runs the probe in place, on the project's own node_modules.
 * - One dev server (the project's `startDevServer`, the same server and dynamic config as the tests) for all runs;
 *   each run is a child process, whose JSON line (the probe's, with the SDK version it actually loaded) is printed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findTemporalCli } from '../src/devserver/cli';
import { startDevServer } from '../src/devserver/server';
import type { ProbeResult } from '../bench/probes/late-resolution/probe';

const ROOT = resolve(__dirname, '..');
const PROBE_DIR = join(ROOT, 'bench', 'probes', 'late-resolution');
export const CACHE_DIR = join(ROOT, '.cache', 'sdk-newest');
/** The packages the probe imports, directly or through the worker. */
const PACKAGES = ['worker', 'client', 'common', 'workflow', 'activity', 'proto'].map((p) => `@temporalio/${p}`);

/** The `@temporalio/worker` version package.json pins. */
export function pinnedSdkVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const version = pkg.dependencies['@temporalio/worker'];
  if (!version || !/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`@temporalio/worker is not pinned: ${version}`);
  return version;
}

const compare = (a: string, b: string) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return x![i]! - y![i]!;
  return 0;
};

/** The highest release (no pre-release) of `@temporalio/worker` on the configured registry. */
export function newestSdkVersion(): string {
  const r = spawnSync('npm', ['view', '@temporalio/worker', 'versions', '--json'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`npm view @temporalio/worker versions failed: ${r.stderr || r.error}`);
  const releases = (JSON.parse(r.stdout) as string[]).filter((v) => /^\d+\.\d+\.\d+$/.test(v)).sort(compare);
  const newest = releases.at(-1);
  if (!newest) throw new Error(`no release of @temporalio/worker on the registry: ${r.stdout.slice(0, 200)}`);
  return newest;
}

/**
 * The probe to run for `version`: the project's own for the pinned version, else a copy beside that version's
 * packages in the cache (installed on first use).
 */
export function prepareProbe(version: string, log: (line: string) => void = () => {}): string {
  if (version === pinnedSdkVersion()) return join(PROBE_DIR, 'probe.ts');
  const dir = join(CACHE_DIR, version);
  const installed = join(dir, 'node_modules', '@temporalio', 'worker', 'package.json');
  const has = existsSync(installed) && (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version;
  if (has !== version) {
    mkdirSync(dir, { recursive: true });
    const dependencies: Record<string, string> = Object.fromEntries(PACKAGES.map((p) => [p, version]));
    // protobufjs at the top, as the project has it (package.json): installed alone, the SDK's packages each get a
    // copy of their own under a grpc-js that takes the top, and the common package's `historyToJSON` then fails on the
    // proto package's messages ("type must be a Type", seen on 1.24.0).
    const proto = spawnSync('npm', ['view', `@temporalio/proto@${version}`, 'dependencies.protobufjs'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (proto.status === 0 && proto.stdout.trim()) dependencies.protobufjs = proto.stdout.trim();
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ private: true, dependencies }, null, 2)}\n`);
    log(
      `installing ${Object.entries(dependencies)
        .map(([p, v]) => `${p}@${v}`)
        .join(', ')} into ${dir} ...`,
    );
    const r = spawnSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 15 * 60_000,
    });
    if (r.status !== 0)
      throw new Error(`npm install of SDK ${version} failed:\n${r.stdout}${r.stderr}${r.error ?? ''}`);
  }
  // Always refreshed: the copy must be the probe as it is now.
  mkdirSync(join(dir, 'probe'), { recursive: true });
  for (const f of ['probe.ts', 'workflow.ts', 'replay.ts']) copyFileSync(join(PROBE_DIR, f), join(dir, 'probe', f));
  return join(dir, 'probe', 'probe.ts');
}

/** Runs the probe at `probePath` in a child process against the server at `address`; its JSON result. */
export function runProbeAt(probePath: string, address: string, args: string[]): Promise<ProbeResult> {
  return new Promise((resolveResult, reject) => {
    const child = spawn(process.execPath, [require.resolve('tsx/cli'), probePath, ...args, '--address', address], {
      // Outside the project, so tsx takes no tsconfig of ours for a copy in the cache.
      cwd: resolve(probePath, '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code === 0 && line?.startsWith('{')) resolveResult(JSON.parse(line) as ProbeResult);
      else reject(new Error(`probe ${probePath} exited with ${code}:\n${out}\n${err.slice(-3000)}`));
    });
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const take = (name: string) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv.splice(i, 2)[1];
  };
  const runs = Number(take('--runs') ?? 1);
  const histories = take('--histories');
  const which = argv[0] && /^(newest|pinned|\d+\.\d+\.\d+)$/.test(argv[0]) ? argv.shift()! : 'newest';
  const version = which === 'newest' ? newestSdkVersion() : which === 'pinned' ? pinnedSdkVersion() : which;
  console.error(`SDK ${version} (${which}; pinned ${pinnedSdkVersion()})`);
  const probe = prepareProbe(version, (l) => console.error(l));
  const server = await startDevServer({ ui: false });
  try {
    for (let run = 1; run <= runs; run++) {
      const dir = histories && resolve(histories, `${version}-run${run}`);
      const args = dir ? [...argv, '--histories', dir, '--temporal-cli', findTemporalCli()] : argv;
      console.log(JSON.stringify(await runProbeAt(probe, server.address, args)));
    }
  } finally {
    await server.stop();
  }
}

if (require.main === module)
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
