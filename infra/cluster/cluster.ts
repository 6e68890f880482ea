/**
 * A real Temporal cluster on this machine: the server built from the Go module (`npm run cluster:install`) with its
 * persistence and visibility on PostgreSQL and several history shards, unlike `temporal server start-dev` (SQLite,
 * one shard). For tests and benchmarks that must see what a production deployment does: workflows spread over
 * shards, every service behind gRPC, caches that refresh instead of being bypassed.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { THREAD_SEARCH_ATTRIBUTES } from '../../src/devserver/server';
import { type LocalPostgres, startLocalPostgres } from '../postgres';
import {
  CLUSTER_DYNAMIC_CONFIG,
  CLUSTER_SERVICES,
  type ClusterService,
  type PostgresEndpoint,
  renderDynamicConfig,
  renderServerConfig,
  type ServicePorts,
} from './config';
import { type ClusterBinaries, clusterBinaries, clusterInstalled } from './install';

const execFileAsync = promisify(execFile);

export interface LocalClusterOptions {
  /**
   * Config, logs and (when started here) PostgreSQL's data live here; reusing a dir reuses its data. Default: a new
   * temp dir, whose database `stop()` deletes.
   */
  dir?: string;
  /** History shards, fixed for the life of the database (default 4, at least 4). */
  shards?: number;
  /** A running PostgreSQL (`startLocalPostgres`) or a `postgres://user:password@host:port` URL (default: one started in `dir`, stopped by `stop()`). */
  postgres?: LocalPostgres | string;
  /** Database of the default store; visibility uses `<database>_visibility` (default `temporal`). */
  database?: string;
  /** gRPC port of the frontend (default: a free port). */
  frontendPort?: number;
  /** Namespace registered with a one-day retention (default `default`). */
  namespace?: string;
  /** `one`: all services in one `temporal-server` process; `per-service`: one process each (default `one`). */
  processes?: 'one' | 'per-service';
  /** Dynamic config on top of {@link CLUSTER_DYNAMIC_CONFIG}. */
  dynamicConfig?: Record<string, unknown>;
  /** Server log level (default `warn`). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Binaries and schema (default: `./.temporal/cluster`, see `installClusterBinaries`). */
  binaries?: ClusterBinaries;
  /** Milliseconds to wait for the cluster to serve the namespace and its search attributes (default 120 s). */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface LocalCluster {
  /** `host:port` of the gRPC frontend. */
  address: string;
  namespace: string;
  shards: number;
  dir: string;
  /** URL of the default store's database (its `executions` table has a `shard_id` column). */
  databaseUrl: string;
  /** Process ids of the server processes: `{ server }`, or one per service. */
  pids: Record<string, number>;
  /** Stops the server processes, then the PostgreSQL started for the cluster (a given one keeps running). */
  stop(): Promise<void>;
}

/** Grace period for a server process to leave the membership ring before it is killed. */
const STOP_TIMEOUT_MS = 15_000;
/** `system.namespaceCacheRefreshInterval` (2 s): how late history and matching see a namespace change. */
const NAMESPACE_REFRESH_MS = 2_000;

function endpointOf(postgres: LocalPostgres | string): PostgresEndpoint {
  const u = new URL(typeof postgres === 'string' ? postgres : postgres.url());
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
  };
}

/** Creates (when missing) and migrates one database with the server's own schema tool. */
async function setupSchema(
  bins: ClusterBinaries,
  pg: PostgresEndpoint,
  database: string,
  schema: 'temporal' | 'visibility',
  create: boolean,
  log: (l: string) => void,
) {
  const base = ['--ep', pg.host, '-p', String(pg.port), '-u', pg.user, '--pl', 'postgres12', '--db', database];
  if (pg.password) base.push('--pw', pg.password);
  const tool = async (...args: string[]) => {
    const { stdout, stderr } = await execFileAsync(bins.sqlTool, [...base, ...args]);
    for (const line of `${stdout}${stderr}`.split('\n')) if (line.trim()) log(`[sql-tool ${database}] ${line}`);
  };
  if (create) {
    await tool('create-database').catch((e: Error & { stderr?: string }) => {
      if (!/already exists/.test(`${e.stderr ?? ''}${e.message}`)) throw e;
    });
  }
  // Version 0.0 only sets up the versioning tables (kept on a rerun); the update applies every migration not yet applied.
  await tool('setup-schema', '-v', '0.0');
  await tool('update-schema', '-d', join(bins.schemaDir, schema, 'versioned'));
}

/**
 * A free port in 20000-32767. Membership ports must fit the `cluster_membership.rpc_port` SMALLINT column (the server
 * dies at start with "out of range for type smallint" otherwise), and staying under Linux's ephemeral range (32768+)
 * keeps outgoing connections from taking a port between this check and the server's bind.
 */
async function lowFreePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (taken.has(port)) continue;
    const free = await new Promise<boolean>((resolveFree) => {
      const srv = createServer();
      srv.once('error', () => resolveFree(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolveFree(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
}

/** A server log line for humans: zap's JSON without the stack trace. */
function brief(line: string): string {
  try {
    const { level, msg, error } = JSON.parse(line) as { level?: string; msg?: string; error?: string };
    return `${level ?? ''} ${msg ?? ''}${error ? `: ${error}` : ''}`.trim();
  } catch {
    return line;
  }
}

async function sleep(ms: number) {
  await new Promise((r) => setTimeout(r, ms));
}

/** Polls `fn` until it resolves; rethrows its last error after the deadline or if `alive()` reports the server gone. */
async function until<T>(
  what: string,
  deadline: number,
  alive: () => string | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  for (;;) {
    const dead = alive();
    if (dead) throw new Error(`${what}: ${dead}`);
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what}: timed out (${String(e)})`);
      await sleep(250);
    }
  }
}

const ALREADY_EXISTS = 6;
const isAlreadyExists = (e: unknown) => (e as { code?: number }).code === ALREADY_EXISTS;

/** Registers the namespace and the thread search attributes, then waits until the frontend serves both. */
async function prepareNamespace(
  conn: Connection,
  namespace: string,
  deadline: number,
  alive: () => string | undefined,
  log: (l: string) => void,
) {
  await conn.workflowService
    .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
    .catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  await until(`namespace ${namespace}`, deadline, alive, () => conn.workflowService.describeNamespace({ namespace }));
  const wanted = Object.keys(THREAD_SEARCH_ATTRIBUTES);
  const listed = async () => (await conn.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  const before = await listed();
  if (wanted.every((k) => k in before)) return;
  const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await conn.operatorService
    .addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(wanted.map((k) => [k, KEYWORD])) })
    .catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  await until('search attributes', deadline, alive, async () => {
    const have = await listed();
    if (!wanted.every((k) => k in have)) throw new Error(`listed: ${Object.keys(have).join(', ')}`);
    // A query by them passes the frontend's validation only once its namespace registry has the new aliases.
    await conn.workflowService.countWorkflowExecutions({
      namespace,
      query: wanted.map((k) => `${k} = 'probe'`).join(' AND '),
    });
  });
  // History and matching refresh their own namespace registries on the same schedule.
  await sleep(2 * NAMESPACE_REFRESH_MS);
  log(`[cluster] search attributes ${wanted.join(', ')} registered in ${namespace}`);
}

/**
 * Starts a local Temporal cluster on PostgreSQL with `shards` history shards; resolves once the namespace and the
 * thread search attributes are served. Needs `npm run cluster:install` first (binaries in `./.temporal/cluster`).
 */
export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalCluster> {
  const bins = options.binaries ?? clusterBinaries();
  if (!options.binaries && !clusterInstalled())
    throw new Error(`no Temporal server in ${join(bins.server, '..')}: run 'npm run cluster:install'`);
  const shards = options.shards ?? 4;
  if (!Number.isInteger(shards) || shards < 4)
    throw new Error(`shards must be an integer of at least 4, got ${shards}`);
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'infinity-cluster-'));
  mkdirSync(dir, { recursive: true });
  // PostgreSQL's data dir goes inside: as root it runs as `postgres`, which must be able to enter a new temp dir (0700).
  if (!options.dir) chmodSync(dir, 0o755);
  const started = Date.now();
  const deadline = started + (options.startTimeoutMs ?? 120_000);

  const ownPostgres =
    options.postgres === undefined ? await startLocalPostgres({ dataDir: join(dir, 'postgres'), log }) : undefined;
  const postgres = ownPostgres ?? options.postgres!;
  const children = new Map<string, ChildProcess>();
  // A test run that dies must not leave servers holding ports and PostgreSQL connections.
  const reap = () => children.forEach((c) => c.kill('SIGKILL'));
  process.once('exit', reap);
  const stop = async () => {
    process.off('exit', reap);
    await Promise.all(
      [...children.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }),
    );
    await ownPostgres?.stop();
    // A throwaway cluster's database (~70 MB) goes with it; its config and logs stay for a post-mortem.
    if (ownPostgres && !options.dir) rmSync(ownPostgres.dataDir, { recursive: true, force: true });
  };
  try {
    const pg = endpointOf(postgres);
    const temporalDb = options.database ?? 'temporal';
    const databases = { temporal: temporalDb, visibility: `${temporalDb}_visibility` };
    for (const [schema, db] of [
      ['temporal', databases.temporal],
      ['visibility', databases.visibility],
    ] as const) {
      if (typeof postgres !== 'string') postgres.createDatabase(db);
      await setupSchema(bins, pg, db, schema, typeof postgres === 'string', log);
    }

    const ports = {} as Record<ClusterService, ServicePorts>;
    const taken = new Set<number>(options.frontendPort ? [options.frontendPort] : []);
    for (const s of CLUSTER_SERVICES)
      ports[s] = { grpc: await lowFreePort(taken), membership: await lowFreePort(taken) };
    ports.frontend = {
      ...ports.frontend,
      grpc: options.frontendPort ?? ports.frontend.grpc,
      http: await lowFreePort(taken),
    };
    const dynamicConfigFile = join(dir, 'dynamic-config.yaml');
    writeFileSync(dynamicConfigFile, renderDynamicConfig({ ...CLUSTER_DYNAMIC_CONFIG, ...options.dynamicConfig }));
    // The server ignores an unknown key or a value of the wrong type with a warning: a typo would silently not apply.
    const check = await execFileAsync(bins.server, ['validate-dynamic-config', dynamicConfigFile]);
    const warnings = `${check.stdout}${check.stderr}`.split('\n').filter((l) => l.includes('warning:'));
    if (warnings.length > 0)
      throw new Error(`temporal-server rejects the dynamic config ${dynamicConfigFile}:\n${warnings.join('\n')}`);
    const configFile = join(dir, 'temporal-server.yaml');
    writeFileSync(
      configFile,
      renderServerConfig({
        numHistoryShards: shards,
        postgres: pg,
        databases,
        ports,
        dynamicConfigFile,
        logLevel: options.logLevel ?? 'warn',
      }),
    );

    // Each process gets its own log file; its lines also go to `log`, and the last ones into a startup error.
    const tails: string[] = [];
    const groups: Array<[string, string[]]> =
      options.processes === 'per-service' ? CLUSTER_SERVICES.map((s) => [s, [s]]) : [['server', [...CLUSTER_SERVICES]]];
    for (const [name, services] of groups) {
      const args = [
        '--config-file',
        configFile,
        '--allow-no-auth',
        'start',
        ...services.flatMap((s) => ['--service', s]),
      ];
      const child = spawn(bins.server, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      const file = createWriteStream(join(dir, `temporal-${name}.log`), { flags: 'a' });
      const onData = (b: Buffer) => {
        file.write(b);
        for (const line of b.toString().split('\n')) {
          if (!line.trim()) continue;
          log(`[temporal-${name}] ${brief(line)}`);
          tails.push(`[${name}] ${brief(line)}`);
          if (tails.length > 40) tails.shift();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', () => file.end());
      children.set(name, child);
    }
    const alive = () => {
      for (const [name, c] of children) {
        if (c.exitCode !== null || c.signalCode !== null)
          return `temporal-server (${name}) exited with ${c.exitCode ?? c.signalCode}:\n${tails.join('\n')}`;
      }
      return undefined;
    };

    const address = `127.0.0.1:${ports.frontend.grpc}`;
    const conn = await until('frontend', deadline, alive, async () => {
      const c = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await c.workflowService.getSystemInfo({});
        return c;
      } catch (e) {
        await c.close();
        throw e;
      }
    });
    try {
      await prepareNamespace(conn, namespace, deadline, alive, log);
    } finally {
      await conn.close();
    }
    log(
      `[cluster] ${address}: ${shards} shards, ${children.size} process(es), ready in ${Date.now() - started} ms; logs and config in ${dir}`,
    );
    const pids = Object.fromEntries([...children].map(([name, c]) => [name, c.pid ?? -1]));
    return {
      address,
      namespace,
      shards,
      dir,
      databaseUrl:
        typeof postgres === 'string'
          ? Object.assign(new URL(postgres), { pathname: `/${databases.temporal}` }).toString()
          : postgres.url(databases.temporal),
      pids,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
