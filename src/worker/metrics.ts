/**
 * Prometheus metrics of a worker process: the Temporal SDK runtime's exporter serves its own metrics (`temporal_*`)
 * and the runtime's (`infinity_*`, src/core/metric-names.ts) at `http://<host>:<port>/metrics`.
 */
import { type LogLevel, Runtime } from '@temporalio/worker';
import { workerLogger } from './logger';

export interface MetricsEndpointOptions {
  /** TCP port of the `/metrics` endpoint. */
  port: number;
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
}

/**
 * Installs the process's Temporal runtime with a Prometheus exporter. Call it before anything creates a worker or
 * connection (the runtime is per process, and the SDK refuses a second one); returns the endpoint's URL.
 */
export function installMetricsRuntime(options: MetricsEndpointOptions, logLevel: LogLevel = 'WARN'): string {
  const host = options.host ?? '127.0.0.1';
  Runtime.install({
    logger: workerLogger(logLevel),
    telemetryOptions: {
      // Our counters name their `_total` themselves (src/core/metric-names.ts); Temporal's come without it on SDK 1.22.
      metrics: { prometheus: { bindAddress: `${host}:${options.port}` } },
    },
  });
  return `http://${host.includes(':') ? `[${host}]` : host}:${options.port}/metrics`;
}
