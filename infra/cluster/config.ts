/**
 * Renders the Temporal server's static config (persistence on PostgreSQL, one port pair per service) and its
 * file-based dynamic config for the local multi-shard cluster.
 */
import { DEFAULT_DYNAMIC_CONFIG } from '../../src/devserver/server';

/** The services of one Temporal cluster (internal-frontend is only needed with an authorizer: none here). */
export const CLUSTER_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type ClusterService = (typeof CLUSTER_SERVICES)[number];

export interface ServicePorts {
  grpc: number;
  /** Ringpop membership: services find each other through the `cluster_membership` table and these ports. */
  membership: number;
  /** Frontend only: the HTTP API. */
  http?: number;
}

export interface PostgresEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface ServerConfigInput {
  numHistoryShards: number;
  postgres: PostgresEndpoint;
  /** Databases of the default store and of visibility. */
  databases: { temporal: string; visibility: string };
  ports: Record<ClusterService, ServicePorts>;
  dynamicConfigFile: string;
  /** `debug` | `info` | `warn` | `error` */
  logLevel: string;
}

/**
 * What the cluster turns on beyond the server's defaults: the project's {@link DEFAULT_DYNAMIC_CONFIG}, and the one
 * `temporal server start-dev` override that matters to threads. Updates, eager workflow start and activities, worker
 * versioning and deployment versions, CHASM are all on by default in server 1.32. start-dev's other overrides
 * (search attribute and Nexus caches bypassed on read, persistence QPS raised to make up for it, a smaller mutable
 * state cache) are left out: this cluster is meant to behave like production, so it waits for cache refreshes instead.
 */
export const CLUSTER_DYNAMIC_CONFIG: Record<string, unknown> = {
  ...DEFAULT_DYNAMIC_CONFIG,
  // Visibility queries per namespace and second and frontend (default 10): `threads`, status polls and tests list
  // threads by search attribute; start-dev raises it to 100 too.
  'frontend.namespaceRPS.visibility': 100,
};

/** Minimal YAML for plain data: maps, lists and scalars; strings double-quoted (JSON strings are YAML strings). */
export function toYaml(value: unknown, indent = ''): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return value.map((v) => `\n${indent}- ${toYaml(v, `${indent}  `).replace(/^\n\s*/, '')}`).join('');
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return entries
      .map(([k, v]) => `\n${indent}${/^[\w.-]+$/.test(k) ? k : JSON.stringify(k)}: ${toYaml(v, `${indent}  `)}`)
      .join('')
      .replace(/: \n/g, ':\n');
  }
  return JSON.stringify(value ?? null);
}

/** The server config YAML (`temporal-server --config-file`). */
export function renderServerConfig(input: ServerConfigInput): string {
  const { postgres, ports } = input;
  const sql = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const frontend = `127.0.0.1:${ports.frontend.grpc}`;
  const services = Object.fromEntries(
    CLUSTER_SERVICES.map((s) => [
      s,
      {
        rpc: {
          grpcPort: ports[s].grpc,
          membershipPort: ports[s].membership,
          bindOnLocalHost: true,
          httpPort: ports[s].http,
        },
      },
    ]),
  );
  const config = {
    log: { stdout: true, level: input.logLevel },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: input.numHistoryShards,
      // Per process: with one process per service each has its own pools (PostgreSQL's limit here is 200).
      datastores: { default: sql(input.databases.temporal, 40), visibility: sql(input.databases.visibility, 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services,
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: frontend,
          httpAddress: `127.0.0.1:${ports.frontend.http}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    // Read at start and every 10 s: edit the file to change a setting of a running cluster.
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
    publicClient: { hostPort: frontend },
  };
  return `# Rendered by infra/cluster/config.ts\n${toYaml(config).trimStart()}\n`;
}

/** The dynamic config YAML: every key unconstrained (applies to all namespaces and task queues). */
export function renderDynamicConfig(values: Record<string, unknown>): string {
  const doc = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, [{ value: v }]]));
  return `# Rendered by infra/cluster/config.ts\n${toYaml(doc).trimStart()}\n`;
}
