/**
 * Starts and stops a throwaway PostgreSQL server from the machine's own binaries (Debian's `postgresql` package) in a
 * temp data directory on a free port: for tests, the benchmark and the local Temporal cluster. PostgreSQL refuses to
 * run as root, so as root the server runs as the `postgres` system user (`runuser`), which owns the data directory.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killOnExit } from '../src/devserver/kill-on-exit';

export interface LocalPostgresOptions {
  /** Data directory (default: a new temp dir, removed by `stop()`). An existing initialized directory is reused. */
  dataDir?: string;
  /** TCP port on 127.0.0.1 (default: a free port). */
  port?: number;
  /** Directory holding `initdb`, `pg_ctl` and `postgres` (default: found under /usr/lib/postgresql or on PATH). */
  binDir?: string;
  /** Milliseconds to wait for the server to accept connections (default 30 s). */
  startTimeoutMs?: number;
  /** Server settings passed as `-c name=value` (e.g. `{ max_connections: 300 }`). */
  settings?: Record<string, string | number>;
  log?: (line: string) => void;
}

export interface LocalPostgres {
  port: number;
  dataDir: string;
  /** Superuser `postgres`, no password (trust auth on loopback only). */
  url(database?: string): string;
  /** Creates the database if it does not exist; returns its URL. */
  createDatabase(name: string): string;
  stop(): Promise<void>;
}

/** Thrown when no PostgreSQL server binaries are installed: says which package to install. */
export class PostgresNotInstalledError extends Error {
  override readonly name = 'PostgresNotInstalledError';
  constructor() {
    super(
      "no PostgreSQL server binaries found (initdb, pg_ctl, postgres): install Debian's `postgresql` package, or pass binDir",
    );
  }
}

/** The newest `/usr/lib/postgresql/<major>/bin`, else the directory on PATH that holds `initdb`. */
export function findPostgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((d) => /^\d+$/.test(d) && existsSync(join(root, d, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (majors.length > 0) return join(root, majors[0]!, 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'initdb'))) return dir;
  return undefined;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Process options that run a PostgreSQL binary as `postgres` when we are root (signals then reach it directly). */
function runAs(): { uid?: number; gid?: number } {
  return asRoot ? postgresIds() : {};
}

export async function startLocalPostgres(options: LocalPostgresOptions = {}): Promise<LocalPostgres> {
  const binDir = options.binDir ?? findPostgresBinDir();
  if (!binDir) throw new PostgresNotInstalledError();
  const log = options.log ?? (() => {});
  // A temp dir we made is ours to remove at stop (a test run's server leaves hundreds of megabytes behind otherwise).
  const ownDir = options.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'infinity-pg-')) : undefined;
  const removeOwnDir = () => ownDir && rmSync(ownDir, { recursive: true, force: true });
  const dataDir = options.dataDir ?? join(ownDir!, 'data');
  const parent = join(dataDir, '..');
  if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true });
  if (asRoot) {
    // The temp parent is 0700 root: the postgres user must be able to reach its data dir.
    chmodSync(parent, 0o755);
    const { uid, gid } = postgresIds();
    chownSync(dataDir, uid, gid);
  }
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    execFileSync(join(binDir, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], {
      stdio: 'pipe',
      ...runAs(),
    });
  }
  const port = options.port ?? (await freePort());
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    port,
    unix_socket_directories: dataDir,
    fsync: 'off', // a throwaway server: durability across machine crashes is not what it is for
    max_connections: 200,
    ...options.settings,
  };
  const args = ['-D', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child: ChildProcess = spawn(join(binDir, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], ...runAs() });
  const cancelKill = killOnExit(child, 'SIGINT');
  let output = '';
  const onData = (b: Buffer) => {
    const s = b.toString();
    output = (output + s).slice(-4000);
    for (const line of s.split('\n')) if (line.trim()) log(`[postgres] ${line}`);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exited: number | null | undefined;
  // A test run that dies must not leave a server behind: SIGQUIT is postgres's immediate shutdown.
  const reap = () => child.kill('SIGQUIT');
  process.once('exit', reap);
  child.once('exit', (code) => {
    exited = code;
    process.off('exit', reap);
  });

  const psql = join(binDir, 'psql');
  const run = (db: string, sql: string) => {
    const args = [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      db,
      '-v',
      'ON_ERROR_STOP=1',
      '-qAtc',
      sql,
    ];
    return execFileSync(existsSync(psql) ? psql : 'psql', args, { stdio: 'pipe' })
      .toString()
      .trim();
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (exited !== undefined) {
      removeOwnDir();
      throw new Error(`postgres exited with code ${exited} before accepting connections:\n${output}`);
    }
    try {
      run('postgres', 'SELECT 1');
      break;
    } catch {
      if (Date.now() > deadline) {
        cancelKill();
        child.kill('SIGKILL');
        removeOwnDir();
        throw new Error(`postgres did not accept connections on port ${port} within the timeout:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  log(`[postgres] ready on 127.0.0.1:${port}, data in ${dataDir}`);
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    dataDir,
    url,
    createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name))
        throw new Error(`database name '${name}' must be lower-case letters, digits and _`);
      if (run('postgres', `SELECT 1 FROM pg_database WHERE datname = '${name}'`) !== '1')
        run('postgres', `CREATE DATABASE ${name}`);
      return url(name);
    },
    async stop() {
      cancelKill();
      if (exited === undefined) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGINT'); // "fast shutdown": rolls back open transactions, closes connections
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await gone;
        clearTimeout(timer);
      }
      removeOwnDir();
    },
  };
}

let ids: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  if (ids) return ids;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error("no 'postgres' system user: install Debian's `postgresql` package");
  ids = { uid, gid };
  return ids;
}
