/** `gateway`: run the RAP callback gateway on its own; workers mint its URLs with the same INFINITY_CALLBACK_KEYS. */
import { Runtime } from '@temporalio/worker';
import type { Command } from 'commander';
import { callbackStateOf } from '../../client/callback-check';
import { startRapGateway } from '../../rap/gateway';
import { CallbackTokens } from '../../rap/tokens';
import { callbackKeysFromEnv } from '../../worker/remote-tools';
import type { Out } from '../format';
import { quietRuntime, until } from '../runtime';
import { CliError, openClient, resolveTarget, type TargetFlags } from '../target';

export function registerGateway(program: Command, out: Out): void {
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
}
