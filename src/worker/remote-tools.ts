/**
 * Everything a worker needs for tools in other processes, in one call: the callback gateway, RAP toolsets and MCP
 * servers. Used by the CLI's `worker` and `dev`; any embedding can use it the same way.
 */
import { Runtime } from '@temporalio/worker';
import type { DeliveryResult } from '../inbox/deliver';
import type { InputMessage, ThreadEvent } from '../core/types';
import { connectMcpTools, type McpServerConfig } from '../mcp/mcp-tools';
import type { Tool, ToolLifecycle, ToolSource } from '../tools/tool';
import type { CallbackStateCheck } from '../rap/callback-guard';
import { callbackUrlMinter, type RapGatewayOptions, startRapGateway } from '../rap/gateway';
import { type CallbackKeys, CallbackTokens, newCallbackKey } from '../rap/tokens';
import { loadRapToolsets, type RapServerConfig } from '../rap/toolsets';

export interface RemoteToolsOptions {
  rapServers?: RapServerConfig[];
  mcpServers?: McpServerConfig[];
  deliver(message: InputMessage): Promise<DeliveryResult>;
  /** The threads' word on their calls (`callbackStateOf(temporal)`): the gateway answers 410 for revoked URLs. */
  callbackState?: CallbackStateCheck;
  onEvent?(event: ThreadEvent): void;
  /** Callback signing keys; a random key when absent (callback URLs then die with the process). */
  keys?: CallbackKeys;
  /** The in-process gateway's listener: address, public URL, the Hosts it serves, its limits (see RapGatewayOptions). */
  gateway?: Pick<
    RapGatewayOptions,
    | 'host'
    | 'port'
    | 'publicUrl'
    | 'allowedHosts'
    | 'bodyLimit'
    | 'views'
    | 'requestTimeoutMs'
    | 'keepAliveTimeoutMs'
    | 'maxConnections'
  >;
  /** A gateway running on its own at this URL (same keys): none is started here. */
  externalGatewayUrl?: string;
}

export interface RemoteTools {
  /** MCP servers' tools: a fixed set, listed at start. */
  tools: Tool[];
  /**
   * RAP toolsets, whose manifests are fetched again for each new agent tree: pass them to `createAgentWorker` as
   * `toolSources` beside `tools`.
   */
  toolSources: ToolSource[];
  lifecycle: ToolLifecycle[];
  gatewayUrl?: string;
  errors: { server: string; error: string }[];
  close(): Promise<void>;
}

/** `INFINITY_CALLBACK_KEYS=k2:<base64>,k1:<base64>`: the first key signs, all verify. */
export function callbackKeysFromEnv(value: string | undefined): CallbackKeys | undefined {
  if (!value) return undefined;
  const entries = value.split(',').map((e) => {
    const [id, secret] = e.split(':');
    if (!id || !secret) throw new TypeError('INFINITY_CALLBACK_KEYS must look like id:base64[,id:base64...]');
    return [id.trim(), Buffer.from(secret.trim(), 'base64')] as const;
  });
  return { current: entries[0]![0], keys: Object.fromEntries(entries) };
}

export async function startRemoteTools(options: RemoteToolsOptions): Promise<RemoteTools> {
  const closers: (() => Promise<void>)[] = [];
  const tools: Tool[] = [];
  const toolSources: ToolSource[] = [];
  const lifecycle: ToolLifecycle[] = [];
  const errors: RemoteTools['errors'] = [];
  let gatewayUrl: string | undefined;
  try {
    if (options.rapServers?.length) {
      const tokens = new CallbackTokens(options.keys ?? { current: 'k0', keys: { k0: newCallbackKey() } });
      let gateway: { callbackUrl(threadId: string, callId: string): string };
      if (options.externalGatewayUrl) {
        if (!options.keys)
          throw new TypeError('an external gateway needs the shared callback keys (INFINITY_CALLBACK_KEYS)');
        gateway = callbackUrlMinter(tokens, options.externalGatewayUrl);
        gatewayUrl = options.externalGatewayUrl;
      } else {
        const started = await startRapGateway({
          tokens,
          deliver: options.deliver,
          ...(options.callbackState && { callbackState: options.callbackState }),
          ...(options.onEvent && { onEvent: options.onEvent }),
          metricMeter: Runtime.instance().metricMeter,
          ...options.gateway,
        });
        closers.push(started.close);
        gateway = started;
        gatewayUrl = started.url;
      }
      const rap = await loadRapToolsets({ servers: options.rapServers, gateway });
      toolSources.push(rap);
      lifecycle.push(rap);
      errors.push(...rap.errors);
    }
    if (options.mcpServers?.length) {
      const mcp = await connectMcpTools(options.mcpServers);
      closers.push(mcp.close);
      tools.push(...mcp.tools);
      errors.push(...mcp.errors);
    }
  } catch (e) {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    throw e;
  }
  return {
    tools,
    toolSources,
    lifecycle,
    ...(gatewayUrl && { gatewayUrl }),
    errors,
    close: async () => {
      for (const c of closers.reverse()) await c().catch(() => undefined);
    },
  };
}
