/**
 * Where the CLI's commands go: flags, then environment variables, then the state file a running `dev` writes, so
 * `infinity-temporal send <thread> hi` just works next to `infinity-temporal dev`.
 */
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Connection, TLSConfig } from '@temporalio/client';
import type { AgentClient } from '../client/agent-client';
import type { ConversationStore } from '../store/conversation-store';
import { tracingFromEnv } from '../tracing/config';
import { CliError } from './errors';
import { agentClient, storeOpen, temporalClient, tracingInstall, tracingInterceptors } from './lazy';

/** Options every command accepts (see `--help`). */
export interface TargetFlags {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  store?: string;
  eventsUrl?: string;
  eventsToken?: string;
  dataDir?: string;
  tls?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsServerName?: string;
}

/** What `dev` publishes for other commands. */
export interface DevState {
  address: string;
  namespace: string;
  taskQueue: string;
  store: string;
  eventsUrl?: string;
  uiUrl?: string;
  pid: number;
  /**
   * How `dev`'s own client sends inputs: `by-kind` (it is one build on a server of its own, decision 62). Clients the
   * CLI builds for the same server and task queue do the same, so their threads read like `startLocalSystem`'s.
   * Absent in the state of an older `dev`: `input`.
   */
  signalNames?: 'input' | 'by-kind';
  /**
   * Whether `dev`'s threads write their title into the `Title` search attribute: true on its own dev server, false
   * with a payload codec (a search attribute is stored in plaintext, past any codec: security item 6).
   */
  titleSearchAttribute?: boolean;
}

export interface Target {
  address: string;
  namespace: string;
  taskQueue: string;
  store?: string;
  eventsUrl?: string;
  eventsToken?: string;
  uiUrl?: string;
  tls?: TLSConfig | boolean;
  /** From a running `dev` (see {@link DevState.signalNames}). */
  signalNames?: 'input' | 'by-kind';
  /** From a running `dev` (see {@link DevState.titleSearchAttribute}). */
  titleSearchAttribute?: boolean;
}

export const DEFAULT_TASK_QUEUE = 'infinity-agents';
export const dataDirOf = (flags: TargetFlags) =>
  resolve(flags.dataDir ?? process.env.INFINITY_DATA_DIR ?? join('.temporal', 'local'));
const stateFile = (flags: TargetFlags) => join(dataDirOf(flags), 'dev.json');

export function writeDevState(flags: TargetFlags, state: DevState): () => void {
  const file = stateFile(flags);
  // Only its owner may change where `send` and `tail` go (and `tail` sends the events token there), whatever the umask.
  writeFileSync(file, JSON.stringify(state, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
  return () => rmSync(file, { force: true });
}

function readDevState(flags: TargetFlags): DevState | undefined {
  const file = stateFile(flags);
  if (!existsSync(file)) return undefined;
  const state = JSON.parse(readFileSync(file, 'utf8')) as DevState;
  try {
    process.kill(state.pid, 0); // still running?
    return state;
  } catch {
    return undefined;
  }
}

async function tlsOf(flags: TargetFlags): Promise<TLSConfig | boolean | undefined> {
  if (!flags.tls && !flags.tlsCert && !flags.tlsCa) return undefined;
  const config: TLSConfig = {};
  if (flags.tlsServerName) config.serverNameOverride = flags.tlsServerName;
  if (flags.tlsCa) config.serverRootCACertificate = await readFile(flags.tlsCa);
  if (flags.tlsCert || flags.tlsKey) {
    if (!flags.tlsCert || !flags.tlsKey) throw new CliError('--tls-cert and --tls-key go together');
    config.clientCertPair = { crt: await readFile(flags.tlsCert), key: await readFile(flags.tlsKey) };
  }
  return Object.keys(config).length > 0 ? config : true;
}

/** The conversation store named by flags, environment or a running `dev`, for commands that need no Temporal server. */
export function storePathOf(flags: TargetFlags): string | undefined {
  return flags.store ?? process.env.INFINITY_STORE ?? readDevState(flags)?.store;
}

export async function resolveTarget(flags: TargetFlags): Promise<Target> {
  const env = process.env;
  const dev = readDevState(flags);
  const address = flags.address ?? env.TEMPORAL_ADDRESS ?? dev?.address;
  if (!address) {
    throw new CliError(
      'no Temporal server: start one with `infinity-temporal dev`, or pass --address (or set TEMPORAL_ADDRESS)',
    );
  }
  const fromDev = dev && address === dev.address ? dev : undefined;
  const target: Target = {
    address,
    namespace: flags.namespace ?? env.TEMPORAL_NAMESPACE ?? fromDev?.namespace ?? 'default',
    taskQueue: flags.taskQueue ?? env.INFINITY_TASK_QUEUE ?? fromDev?.taskQueue ?? DEFAULT_TASK_QUEUE,
  };
  const store = flags.store ?? env.INFINITY_STORE ?? fromDev?.store;
  if (store) target.store = store;
  const eventsUrl = flags.eventsUrl ?? env.INFINITY_EVENTS_URL ?? fromDev?.eventsUrl;
  if (eventsUrl) target.eventsUrl = eventsUrl;
  const eventsToken = flags.eventsToken ?? env.INFINITY_EVENTS_TOKEN;
  if (eventsToken) target.eventsToken = eventsToken;
  if (fromDev?.uiUrl) target.uiUrl = fromDev.uiUrl;
  // Threads started next to `dev` (its server and task queue: its one worker) read as its own do: inputs by kind,
  // titles in `Title` unless `dev` runs with a payload codec (issue 30 item 1).
  if (fromDev && target.taskQueue === fromDev.taskQueue) {
    if (fromDev.signalNames) target.signalNames = fromDev.signalNames;
    if (fromDev.titleSearchAttribute === true) target.titleSearchAttribute = true;
  }
  const tls = await tlsOf(flags);
  if (tls !== undefined) target.tls = tls;
  return target;
}

/** What {@link openClient} opens. */
export interface OpenedClient {
  client: AgentClient;
  /** The client's conversation store, when the target names one that is there (a SQLite file that exists). */
  store: ConversationStore | undefined;
  /** Releases the connection and the store. */
  close(): Promise<void>;
}

/**
 * An {@link AgentClient} for the target; `close` releases the connection and the store. The store is opened read-only
 * unless `stage` (commands that send input stage large inputs in it, as the worker's tools do).
 */
export async function openClient(target: Target, options: { stage?: boolean } = {}): Promise<OpenedClient> {
  // Loaded here, not at start-up: only the commands that connect pay for the client (see lazy.ts).
  const { Client, Connection } = temporalClient();
  const { AgentClient } = agentClient();
  const { isPostgresUrl, openConversationStore } = storeOpen();
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: target.address,
      connectTimeout: '5s',
      ...(target.tls !== undefined && { tls: target.tls }),
    });
  } catch (e) {
    throw new CliError(`cannot reach Temporal at ${target.address}: ${e instanceof Error ? e.message : String(e)}`);
  }
  // A SQLite file that is not there is not created (and a client needs no store); a database URL is always opened.
  const store =
    target.store && (isPostgresUrl(target.store) || existsSync(target.store))
      ? openConversationStore(target.store, { readonly: !options.stage })
      : undefined;
  // With OTEL_EXPORTER_OTLP_ENDPOINT (and the like) set, what a command sends starts a trace (docs/operations.md).
  // OpenTelemetry is loaded only then: tracingFor() installs nothing when the environment asks for no tracing.
  const tracing = tracingFromEnv() ? tracingInstall().tracingFor() : undefined;
  const client = new AgentClient({
    client: new Client({
      connection,
      namespace: target.namespace,
      ...(tracing && { interceptors: tracingInterceptors().tracingClientInterceptors() }),
    }),
    taskQueue: target.taskQueue,
    ...(store && { store }),
    ...(target.eventsUrl && {
      eventsUrl: target.eventsUrl
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    }),
    ...(target.eventsToken && { eventsToken: target.eventsToken }),
    ...(target.signalNames && { signalNames: target.signalNames }),
    // AgentClient still writes no Title when its own data converter encodes payloads (security item 6).
    ...(target.titleSearchAttribute && { threadOptions: { titleSearchAttribute: true } }),
  });
  return {
    client,
    store,
    close: async () => {
      await store?.close();
      await connection.close();
      // A command is a short process: its spans go out before it exits.
      await tracing?.flush().catch(() => undefined);
    },
  };
}
