/**
 * Builds the Temporal server and its SQL schema tool from the Go module, at the server version the project's Temporal
 * CLI bundles, so the multi-shard cluster runs the same server code as `temporal server start-dev`. Uses the
 * machine's Go and its default module and build caches (a second build, or one in CI on the same machine, reuses
 * them); no download URLs, no containers.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { isExecutable, temporalHome } from '../../src/devserver/cli';

/** The server the Temporal CLI 1.9.1 bundles (`temporal --version`: "Server 1.32.0"; the CLI's go.mod agrees). */
export const TEMPORAL_SERVER_VERSION = 'v1.32.0';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

export interface ClusterBinaries {
  /** `temporal-server` */
  server: string;
  /** `temporal-sql-tool` */
  sqlTool: string;
  /** Holds `temporal/` and `visibility/` (the module's `schema/postgresql/v12/*`). */
  schemaDir: string;
  version: string;
}

export interface InstallClusterOptions {
  /** Where `bin/` and `schema/` go (default `<temporal home>/cluster`, i.e. `./.temporal/cluster`). */
  dir?: string;
  /** Server module version (default {@link TEMPORAL_SERVER_VERSION}). */
  version?: string;
  /** The Go binary (default `$GO`, else `/usr/local/go/bin/go` when present, else `go` on PATH). */
  go?: string;
  /** Rebuild even when the stamp matches (default false). */
  force?: boolean;
  log?: (line: string) => void;
}

/** Paths of the cluster binaries under `dir` (default `./.temporal/cluster`), installed or not. */
export function clusterBinaries(
  dir = join(temporalHome(), 'cluster'),
  version = TEMPORAL_SERVER_VERSION,
): ClusterBinaries {
  return {
    server: join(dir, 'bin', 'temporal-server'),
    sqlTool: join(dir, 'bin', 'temporal-sql-tool'),
    schemaDir: join(dir, 'schema'),
    version,
  };
}

/** True when the binaries and schema under `dir` are there and stamped with `version`. */
export function clusterInstalled(dir?: string, version = TEMPORAL_SERVER_VERSION): boolean {
  const b = clusterBinaries(dir, version);
  const stamp = join(b.server, '..', '..', 'VERSION');
  return (
    isExecutable(b.server) &&
    isExecutable(b.sqlTool) &&
    existsSync(join(b.schemaDir, 'temporal', 'versioned')) &&
    existsSync(join(b.schemaDir, 'visibility', 'versioned')) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8').trim() === version
  );
}

function findGo(go?: string): string {
  if (go) return go;
  if (process.env.GO) return process.env.GO;
  return isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go';
}

/** Runs a command to completion, streaming its output to `log`; rejects with the tail of the output. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (b: Buffer) => {
      const s = b.toString();
      out += s;
      for (const line of s.split('\n')) if (line.trim()) log(line);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolveRun(out)
        : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${out.split('\n').slice(-20).join('\n')}`)),
    );
  });
}

/** Copies a directory tree; files in the module cache are read-only, the copies are not (so a reinstall can replace them). */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copyTree(join(from, entry.name), join(to, entry.name));
    else copyFileSync(join(from, entry.name), join(to, entry.name));
  }
}

/**
 * Builds `temporal-server` and `temporal-sql-tool` with `go install` (niced: the machine has other work) and copies
 * the PostgreSQL schema; a no-op when the version stamp matches. A cold build downloads the module graph and compiles
 * the whole server: many minutes on two cores.
 */
export async function installClusterBinaries(options: InstallClusterOptions = {}): Promise<ClusterBinaries> {
  const dir = options.dir ?? join(temporalHome(), 'cluster');
  const version = options.version ?? TEMPORAL_SERVER_VERSION;
  const log = options.log ?? (() => {});
  const bins = clusterBinaries(dir, version);
  if (!options.force && clusterInstalled(dir, version)) return bins;

  const go = findGo(options.go);
  const goVersion = spawnSync(go, ['version'], { encoding: 'utf8' });
  if (goVersion.status !== 0)
    throw new Error(
      `no Go at '${go}' (${goVersion.error?.message ?? goVersion.stderr}): install Go, or set GO=/path/to/go`,
    );
  // The server's go.mod asks for Go 1.26.8: an older Go fetches that toolchain through the module proxy first.
  log(`using ${goVersion.stdout.trim()}`);
  const staging = join(dir, 'bin', '.staging');
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // GOBIN only: GOMODCACHE and GOCACHE keep the machine's defaults so every later build reuses them. No cgo: the
  // binaries are static, and the server's SQLite driver is pure Go anyway.
  const env = { ...process.env, GOBIN: staging, CGO_ENABLED: '0' };
  const pkgs = [
    `${TEMPORAL_SERVER_MODULE}/cmd/server@${version}`,
    `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql@${version}`,
  ];
  const nice = spawnSync('nice', ['true']).status === 0;
  const started = Date.now();
  log(`building ${pkgs.join(' ')} with ${go} (a cold build takes many minutes) ...`);
  // -s -w: no symbol table or DWARF, a third smaller; panics still print file:line stack traces.
  const goArgs = ['install', '-ldflags=-s -w', ...pkgs];
  await run(nice ? 'nice' : go, nice ? ['-n', '10', go, ...goArgs] : goArgs, env, log);
  renameSync(join(staging, 'server'), bins.server);
  renameSync(join(staging, 'sql'), bins.sqlTool);
  rmSync(staging, { recursive: true, force: true });
  log(`built in ${Math.round((Date.now() - started) / 1000)} s`);

  // `go install` already put the module in the cache; `go mod download -json` says where.
  const info = JSON.parse(
    await run(go, ['mod', 'download', '-json', `${TEMPORAL_SERVER_MODULE}@${version}`], env, () => {}),
  ) as { Dir?: string; Error?: string };
  if (!info.Dir)
    throw new Error(`go mod download ${TEMPORAL_SERVER_MODULE}@${version}: ${info.Error ?? 'no module directory'}`);
  rmSync(bins.schemaDir, { recursive: true, force: true });
  for (const part of ['temporal', 'visibility'])
    copyTree(join(info.Dir, 'schema', 'postgresql', 'v12', part), join(bins.schemaDir, part));
  writeFileSync(join(dir, 'VERSION'), `${version}\n`);
  return bins;
}
