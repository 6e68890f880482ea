/**
 * What `gateway` does (its flags and help: commands/gateway.ts): the RAP callback gateway, delivering through a client,
 * until a signal. Loaded only when the command runs (see lazy-actions.ts).
 */
import { Runtime } from '@temporalio/worker';
import type { Command } from 'commander';
import { callbackStateOf } from '../../client/callback-check';
import { startRapGateway } from '../../rap/gateway';
import { CallbackTokens } from '../../rap/tokens';
import { callbackKeysFromEnv } from '../../worker/remote-tools';
import type { Out } from '../format';
import { quietRuntime, until } from '../runtime';
import { CliError } from '../errors';
import { openClient, resolveTarget, type TargetFlags } from '../target';

export interface GatewayOptions {
  port: string;
  host: string;
  publicUrl?: string;
  allowedHosts?: string;
  metricsPort?: string;
  metricsHost?: string;
}

export async function runGateway(opts: GatewayOptions, cmd: Command, out: Out): Promise<void> {
  // The gateway needs no Temporal runtime of its own, except to export metrics.
  if (opts.metricsPort !== undefined) quietRuntime(false, { port: opts.metricsPort, host: opts.metricsHost }, out);
  const keys = callbackKeysFromEnv(process.env.INFINITY_CALLBACK_KEYS);
  if (!keys)
    throw new CliError('the gateway needs INFINITY_CALLBACK_KEYS (id:base64[,id:base64...]), shared with the workers');
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
}
