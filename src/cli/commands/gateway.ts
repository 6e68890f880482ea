/** `gateway`: run the RAP callback gateway on its own; workers mint its URLs with the same INFINITY_CALLBACK_KEYS. */
import type { Command } from 'commander';
import type { GatewayOptions } from '../actions/gateway';
import type { Out } from '../format';
import { gatewayAction } from '../lazy-actions';

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
    // What it runs on (the gateway, the client, the Temporal runtime for metrics) loads when it runs: actions/gateway.ts.
    .action(async (opts: GatewayOptions, cmd: Command) => gatewayAction().runGateway(opts, cmd, out));
}
