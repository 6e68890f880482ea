/** `dev` (dev server + worker + events, the embedded default) and `worker` (serve any Temporal cluster). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import type { Command } from 'commander';
import { callbackStateOf } from '../client/callback-check';
import { deliverInput, type DeliveryResult } from '../inbox/deliver';
import type { CallbackStateCheck } from '../rap/callback-guard';
import { limitsProblem, type ProviderLimits } from '../core/capacity';
import type { InputMessage } from '../core/types';
import { modelFromEnv, modelFromSpec } from '../model/registry';
import { startRapGateway } from '../rap/gateway';
import { callbackKeysFromEnv, startRemoteTools } from '../worker/remote-tools';
import { CallbackTokens } from '../rap/tokens';
import { describeStore, openConversationStore } from '../store/open';
import { PostgresConversationStore } from '../store/postgres';
import { buildStatusDemoTool } from '../tools/demo';
import { startLocalSystem } from '../local-system';
import { createAgentWorker } from '../worker/create-worker';
import { DEFAULT_MEMORY_TARGET, type ResourceTargets } from '../worker/resource-targets';
import { installMetricsRuntime } from '../worker/metrics';
import { workerLogger } from '../worker/logger';
import { tracingFor } from '../tracing/install';
import { tracingClientInterceptors } from '../tracing/interceptors';
import { deploymentOf, type DeploymentFlags, deploymentOptions } from './deployment';
import { eventsEndpointOf, eventsTokenNote } from './events-endpoint';
import { loadTools, toolNames } from './load-tools';
import { colour } from './format';
import type { Out } from './thread-commands';
import {
  CliError,
  dataDirOf,
  DEFAULT_TASK_QUEUE,
  openClient,
  resolveTarget,
  type TargetFlags,
  writeDevState,
} from './target';

interface ServeOptions {
  model?: string;
  tools?: string;
  eventsPort?: string;
  eventsHost?: string;
  events?: boolean;
  verbose?: boolean;
  rap?: string[];
  mcp?: string[];
  gatewayPort?: string;
  publicUrl?: string;
  gatewayUrl?: string;
  metricsPort?: string;
  metricsHost?: string;
  cpuTarget?: string;
  memoryTarget?: string;
  limits?: string;
}

const until = (signals: NodeJS.Signals[]) =>
  new Promise<void>((r) => signals.forEach((s) => process.once(s, () => r())));

const modelOf = (opts: ServeOptions) => (opts.model ? modelFromSpec(opts.model) : modelFromEnv());

/** A TCP port flag: a whole number in 1..65535, or a usage error. */
function portOf(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535)
    throw new CliError(`${flag} must be a port number (1-65535), got '${value}'`);
  return port;
}

/**
 * The process's Temporal runtime: the worker's own logs stay out of the terminal unless asked for, and with
 * `--metrics-port` it exports Prometheus metrics (Temporal's and the runtime's `infinity_*`).
 */
function quietRuntime(verbose: boolean | undefined, metrics?: { port?: string; host?: string }, out?: Out): void {
  const level = verbose ? 'INFO' : 'WARN';
  const port = portOf('--metrics-port', metrics?.port);
  if (port === undefined) {
    Runtime.install({ logger: workerLogger(level) });
    return;
  }
  const url = installMetricsRuntime({ port, ...(metrics?.host && { host: metrics.host }) }, level);
  out?.(`metrics ${url}`);
}

/** A fraction flag (`--cpu-target 0.7`, or a percentage `70%`): a number in (0, 1], or a usage error. */
function fractionOf(flag: string, value: string): number {
  const n = value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : Number(value);
  if (!/^\d*\.?\d+%?$/.test(value) || !(n > 0 && n <= 1))
    throw new CliError(`${flag} must be a fraction of the machine in (0, 1] such as 0.7 or 70%, got '${value}'`);
  return n;
}

/** `--cpu-target` / `--memory-target` → the worker's resource targets (decision 64). */
function resourceTargetsOf(opts: ServeOptions): { resourceTargets?: ResourceTargets } {
  if (opts.cpuTarget === undefined) {
    if (opts.memoryTarget !== undefined) throw new CliError('--memory-target needs --cpu-target');
    return {};
  }
  return {
    resourceTargets: {
      cpu: fractionOf('--cpu-target', opts.cpuTarget),
      ...(opts.memoryTarget !== undefined && { memory: fractionOf('--memory-target', opts.memoryTarget) }),
    },
  };
}

/** `--limits <file>` → the worker's provider limits (issue 27 §2): a JSON file, checked before anything starts. */
function limitsOf(opts: ServeOptions): { limits?: ProviderLimits } {
  if (opts.limits === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(opts.limits, 'utf8'));
  } catch (e) {
    throw new CliError(`--limits: cannot read ${opts.limits}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const problem = limitsProblem(parsed);
  if (problem) throw new CliError(`--limits ${opts.limits}: ${problem}`);
  return { limits: parsed as ProviderLimits };
}

/** The line a worker prints about its provider limits. */
function limitsLine(limits: ProviderLimits, modelId: string): string {
  const parts = [`key ${limits.key ?? modelId}`];
  if (limits.rpm !== undefined) parts.push(`${limits.rpm} requests/min`);
  if (limits.tpm !== undefined) parts.push(`${limits.tpm} tokens/min`);
  if (limits.concurrency !== undefined) parts.push(`${limits.concurrency} at once`);
  return `provider limits · ${parts.join(' · ')}`;
}

function serveOptions(cmd: Command): Command {
  return cmd
    .option('--verbose', "show the Temporal worker's own logs")
    .option(
      '--cpu-target <fraction>',
      'take new workflow tasks only while machine CPU is under this (e.g. 0.7): headroom for high-priority threads',
    )
    .option('--memory-target <fraction>', 'with --cpu-target: the same for machine memory (default 0.9)')
    .option(
      '--limits <file>',
      'provider limits shared by every worker on the store: a JSON file {"key","rpm","tpm","concurrency","reserve"}',
    )
    .option(
      '--metrics-port <port>',
      "serve Prometheus metrics (Temporal's and infinity_*) at http://<metrics-host>:<port>/metrics",
    )
    .option('--metrics-host <host>', 'interface of the metrics endpoint (default 127.0.0.1)')
    .option(
      '--model <spec>',
      'provider:model, e.g. anthropic:claude-sonnet-4-5 (default: INFINITY_MODEL, else simulated)',
    )
    .option('--tools <module>', 'a module exporting `tools` (default for dev: the demo get_build_status tool)')
    .option('--events-port <port>', 'port of the live events endpoint (default: any free port)')
    .option('--events-host <host>', 'host of the live events endpoint (default 127.0.0.1)')
    .option('--no-events', 'no live events endpoint')
    .option('--rap <url...>', 'RAP tool servers (base URLs); their callbacks come through a gateway in this process')
    .option(
      '--mcp <server...>',
      'MCP servers: name=https://host/mcp (Streamable HTTP) or "name=command arg..." (stdio)',
    )
    .option('--gateway-port <port>', 'port of the RAP callback gateway (default: any free port)')
    .option('--public-url <url>', 'the URL tool servers reach the gateway at (default: its loopback address)')
    .option(
      '--gateway-url <url>',
      'use a gateway running on its own (`infinity-temporal gateway`, same INFINITY_CALLBACK_KEYS)',
    );
}

/** `name=url` or `name=command args` → an MCP server config. */
function mcpServer(spec: string) {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new CliError(`--mcp ${spec}: write name=url or name=command`);
  const name = spec.slice(0, eq);
  const rest = spec.slice(eq + 1).trim();
  if (/^https?:\/\//.test(rest)) return { name, url: rest };
  const [command, ...args] = rest.split(/\s+/);
  return { name, command: command!, args };
}

async function remoteTools(
  opts: ServeOptions,
  deliver: (m: InputMessage) => Promise<DeliveryResult>,
  out: (line: string) => void,
  callbackState: CallbackStateCheck,
) {
  if (!opts.rap?.length && !opts.mcp?.length) return undefined;
  const keys = callbackKeysFromEnv(process.env.INFINITY_CALLBACK_KEYS);
  const remote = await startRemoteTools({
    ...(opts.rap && { rapServers: opts.rap.map((url) => ({ url })) }),
    ...(opts.mcp && { mcpServers: opts.mcp.map(mcpServer) }),
    deliver,
    callbackState,
    ...(keys && { keys }),
    gateway: { port: Number(opts.gatewayPort ?? 0), ...(opts.publicUrl && { publicUrl: opts.publicUrl }) },
    ...(opts.gatewayUrl && { externalGatewayUrl: opts.gatewayUrl }),
  });
  for (const e of remote.errors) out(colour.yellow(`tool server ${e.server}: ${e.error}`));
  if (remote.gatewayUrl) out(`gateway ${remote.gatewayUrl}`);
  if (remote.gatewayUrl && !keys)
    out(colour.dim('(random callback key: set INFINITY_CALLBACK_KEYS for callback URLs that survive a restart)'));
  return remote;
}

export function registerServeCommands(program: Command, out: (line: string) => void): void {
  program
    .command('gateway')
    .description('run the RAP callback gateway on its own; workers mint its URLs with the same INFINITY_CALLBACK_KEYS')
    .option('--port <port>', 'listening port', '8787')
    .option('--host <host>', 'listening address', '127.0.0.1')
    .option('--public-url <url>', 'the URL tool servers reach it at')
    .option(
      '--allowed-hosts <names>',
      "Host names served besides loopback ones and the public URL's, comma-separated (a proxy's); on a non-loopback --host, turns the Host check on",
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics (infinity_callbacks_rejected) at http://<metrics-host>:<port>/metrics',
    )
    .option('--metrics-host <host>', 'interface of the metrics endpoint (default 127.0.0.1)')
    .action(
      async (
        opts: {
          port: string;
          host: string;
          publicUrl?: string;
          allowedHosts?: string;
          metricsPort?: string;
          metricsHost?: string;
        },
        cmd: Command,
      ) => {
        // The gateway needs no Temporal runtime of its own, except to export metrics.
        if (opts.metricsPort !== undefined)
          quietRuntime(false, { port: opts.metricsPort, host: opts.metricsHost }, out);
        const keys = callbackKeysFromEnv(process.env.INFINITY_CALLBACK_KEYS);
        if (!keys)
          throw new CliError(
            'the gateway needs INFINITY_CALLBACK_KEYS (id:base64[,id:base64...]), shared with the workers',
          );
        const target = await resolveTarget(cmd.optsWithGlobals<TargetFlags>());
        // Writable, given --store: large results are staged in it instead of travelling through Temporal.
        const { client, close } = await openClient(target, { stage: true });
        const gateway = await startRapGateway({
          tokens: new CallbackTokens(keys),
          deliver: (m) => client.deliver(m),
          // Revocation (410) comes from the threads themselves: this gateway needs no state of its own to survive a restart.
          callbackState: callbackStateOf(client.temporal),
          ...(opts.metricsPort !== undefined && { metricMeter: Runtime.instance().metricMeter }),
          host: opts.host,
          port: Number(opts.port),
          ...(opts.publicUrl && { publicUrl: opts.publicUrl }),
          ...(opts.allowedHosts !== undefined && {
            allowedHosts: opts.allowedHosts
              .split(',')
              .map((h) => h.trim())
              .filter(Boolean),
          }),
        });
        out(`gateway ${gateway.url} · delivering to ${target.address}`);
        await until(['SIGINT', 'SIGTERM']);
        await gateway.close();
        await close();
      },
    );

  serveOptions(program.command('dev'))
    .description('run a Temporal dev server, a worker and the live events endpoint here; prints the UI link')
    .option('--port <port>', "the dev server's gRPC port, stable across restarts (default: a free port)")
    .option('--ui-port <port>', "the Temporal UI's port (default: a free port)")
    .option(
      '--answer-by-hand',
      'the demo get_build_status tool leaves its calls pending, for `deliver` or a `tool_result` signal',
    )
    .action(async (opts: ServeOptions & { port?: string; uiPort?: string; answerByHand?: boolean }, cmd: Command) => {
      const port = portOf('--port', opts.port);
      const uiPort = portOf('--ui-port', opts.uiPort);
      const targets = { ...resourceTargetsOf(opts), ...limitsOf(opts) };
      const flags = cmd.optsWithGlobals<TargetFlags>();
      quietRuntime(opts.verbose, { port: opts.metricsPort, host: opts.metricsHost }, out);
      const model = modelOf(opts);
      // The gateway starts before the system it delivers to: tools need its callback URLs.
      const ref: { deliver?: (m: InputMessage) => Promise<DeliveryResult>; check?: CallbackStateCheck } = {};
      const remote = await remoteTools(
        opts,
        (m) => ref.deliver!(m),
        out,
        async (t, c) => ref.check?.(t, c),
      );
      const own = loadTools(opts.tools);
      // The demo tool answers by itself 2 s later, unless the user wants to answer its calls (issue 30 item 4).
      const tools = [
        ...(own ?? [buildStatusDemoTool(2000, { answers: !opts.answerByHand })]),
        ...(remote?.tools ?? []),
      ];
      // Live events always need a token: INFINITY_EVENTS_TOKEN, or the one kept in the data directory.
      const events = eventsEndpointOf(opts, dataDirOf(flags));
      const system = await startLocalSystem({
        model,
        tools,
        // This command handles the signals itself (below), in its own order: state file, system, remote tools.
        stopOnSignal: false,
        dataDir: dataDirOf(flags),
        ...((port !== undefined || uiPort !== undefined) && {
          devServer: { ...(port !== undefined && { port }), ...(uiPort !== undefined && { uiPort }) },
        }),
        taskQueue: flags.taskQueue ?? DEFAULT_TASK_QUEUE,
        ...(events && { eventsEndpoint: events.options }),
        ...(remote && { toolLifecycle: remote.lifecycle, toolSources: remote.toolSources }),
        ...targets,
      });
      ref.deliver = (m) => system.client.deliver(m);
      ref.check = callbackStateOf(system.client.temporal);
      const removeState = writeDevState(flags, {
        address: system.devServer.address,
        namespace: system.devServer.namespace,
        taskQueue: flags.taskQueue ?? DEFAULT_TASK_QUEUE,
        store: system.storePath ?? '',
        ...(system.eventsUrl && { eventsUrl: system.eventsUrl }),
        ...(system.devServer.uiUrl && { uiUrl: system.devServer.uiUrl }),
        pid: process.pid,
        // As startLocalSystem's own client: one build on its own server (by kind, titles in `Title`). With a payload
        // codec this must be false, as startLocalSystem's is: a search attribute bypasses the codec (security 6).
        signalNames: 'by-kind',
        titleSearchAttribute: true,
      });
      out(`${colour.bold('infinity-temporal dev')} · model ${model.id}`);
      out(`Temporal UI      ${system.devServer.uiUrl ?? '(disabled)'}`);
      out(`Temporal address ${system.devServer.address}`);
      if (system.eventsUrl) out(`Live events      ${system.eventsUrl}`);
      if (system.eventsUrl && events) out(colour.dim(`                 (${eventsTokenNote(events)})`));
      out(`Store            ${system.storePath}`);
      out(`Task queue       ${flags.taskQueue ?? DEFAULT_TASK_QUEUE}`);
      out(`Tools            ${toolNames(tools)}`);
      if (targets.limits)
        out(`Provider limits  ${limitsLine(targets.limits, model.id).replace(/^provider limits · /, '')}`);
      if (!own)
        out(
          colour.dim(
            opts.answerByHand
              ? '                 (demo: get_build_status leaves its calls pending; answer with `infinity-temporal deliver`)'
              : '                 (demo: get_build_status answers by itself after 2 s; --answer-by-hand leaves calls to you)',
          ),
        );
      // For the `temporal` CLI and other clients in other shells (README "From the Temporal CLI").
      out(colour.dim(`export TEMPORAL_ADDRESS=${system.devServer.address}`));
      out(
        colour.dim(`Try: infinity-temporal send demo "Is build 42 green?" && infinity-temporal tail demo --until-idle`),
      );
      out(colour.dim('Ctrl-C stops everything.'));
      await until(['SIGINT', 'SIGTERM']);
      removeState();
      await system.shutdown();
      await remote?.close();
    });

  deploymentOptions(serveOptions(program.command('worker')))
    .description('serve threads from any Temporal cluster (see the global --address, --namespace, --tls options)')
    .action(async (opts: ServeOptions & DeploymentFlags, cmd: Command) => {
      const flags = cmd.optsWithGlobals<TargetFlags>();
      const deployment = deploymentOf(opts);
      const targets = { ...resourceTargetsOf(opts), ...limitsOf(opts) };
      quietRuntime(opts.verbose, { port: opts.metricsPort, host: opts.metricsHost }, out);
      const target = await resolveTarget(flags);
      // Before anything connects: a network bind without a token is a usage error.
      const events = eventsEndpointOf(opts, dataDirOf(flags));
      const storePath = target.store ?? join(dataDirOf(flags), 'conversations.sqlite');
      const connection = await NativeConnection.connect({
        address: target.address,
        ...(target.tls !== undefined && { tls: target.tls }),
      });
      const store = openConversationStore(storePath);
      // A database's schema migrates now rather than in the first slice: a wrong URL or role fails the start-up.
      if (store instanceof PostgresConversationStore) {
        await store.migrate().catch(async (e: unknown) => {
          await store.close();
          throw new CliError(
            `cannot use the conversation store ${describeStore(storePath)}: ${e instanceof Error ? e.message : String(e)}`,
          );
        });
      }
      const model = modelOf(opts);
      // Traced when the OTEL_* variables say so (the worker reads them too): the gateway's deliveries continue traces.
      const tracing = tracingFor();
      const temporal = new Client({
        connection,
        namespace: target.namespace,
        ...(tracing && { interceptors: tracingClientInterceptors() }),
      });
      const remote = await remoteTools(
        opts,
        (m) => deliverInput(temporal, m, { store }),
        out,
        callbackStateOf(temporal),
      );
      const worker = await createAgentWorker({
        connection,
        namespace: target.namespace,
        taskQueue: target.taskQueue,
        store,
        model,
        tools: [...(loadTools(opts.tools) ?? []), ...(remote?.tools ?? [])],
        ...(events && { eventsEndpoint: events.options }),
        ...(remote && { toolLifecycle: remote.lifecycle, toolSources: remote.toolSources }),
        ...(deployment && { deployment }),
        ...targets,
      });
      const running = worker.run();
      // Machine-readable first lines: tests and scripts wait for them.
      out(`worker ready · task queue ${target.taskQueue} · ${target.address} · model ${model.id}`);
      if (worker.eventsUrl) out(`events ${worker.eventsUrl}`);
      if (worker.eventsUrl && events) out(colour.dim(eventsTokenNote(events)));
      out(`store ${describeStore(storePath)}`);
      const t = targets.resourceTargets;
      if (t) out(`resource targets · cpu ${t.cpu} · memory ${t.memory ?? DEFAULT_MEMORY_TARGET}`);
      if (targets.limits) out(limitsLine(targets.limits, model.id));
      if (deployment) {
        out(`deployment ${deployment.name} · build ${deployment.buildId} · ${deployment.defaultVersioningBehavior}`);
        // A versioned worker gets no task until its build is current (or ramping, or pinned to).
        out(
          colour.dim(
            `make it current: temporal worker deployment set-current-version --deployment-name ${deployment.name} --build-id ${deployment.buildId}`,
          ),
        );
      }
      await Promise.race([until(['SIGINT', 'SIGTERM']), running]);
      await worker.shutdown();
      await remote?.close();
      await store.close();
      await connection.close();
    });
}
