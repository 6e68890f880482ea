/** `--rap` and `--mcp`: the remote tool servers of `dev` and `worker`, and the RAP callback gateway they answer through. */
import type { DeliveryResult } from '../inbox/deliver';
import type { CallbackStateCheck } from '../rap/callback-guard';
import type { InputMessage } from '../core/types';
import { callbackKeysFromEnv, startRemoteTools } from '../worker/remote-tools';
import { colour, type Out } from './format';
import type { ServeOptions } from './serve-flags';
import { CliError } from './errors';

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

export async function remoteTools(
  opts: ServeOptions,
  deliver: (m: InputMessage) => Promise<DeliveryResult>,
  out: Out,
  callbackState: CallbackStateCheck,
) {
  if (!opts.rap?.length && !opts.mcp?.length) return undefined;
  const keys = callbackKeysFromEnv(process.env.INFINITY_CALLBACK_KEYS);
  // The RAP tool servers' bearer token, from the environment (never argv): one for every `--rap` server. The SDK's
  // servers want one by default (`createRapToolServer`'s `server.token`, or the `token` it was given).
  const rapToken = process.env.INFINITY_RAP_TOKEN;
  const remote = await startRemoteTools({
    ...(opts.rap && { rapServers: opts.rap.map((url) => ({ url, ...(rapToken && { token: rapToken }) })) }),
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
