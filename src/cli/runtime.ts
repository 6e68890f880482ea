/** The process of a long-running command (`gateway`, `dev`, `worker`): its Temporal runtime, and its end on a signal. */
import { Runtime } from '@temporalio/worker';
import { installMetricsRuntime } from '../worker/metrics';
import { workerLogger } from '../worker/logger';
import type { Out } from './format';
import { portOf } from './serve-flags';

/** Resolves at the first of these signals. */
export const until = (signals: NodeJS.Signals[]) =>
  new Promise<void>((r) => signals.forEach((s) => process.once(s, () => r())));

/**
 * The process's Temporal runtime: the worker's own logs stay out of the terminal unless asked for, and with
 * `--metrics-port` it exports Prometheus metrics (Temporal's and the runtime's `infinity_*`).
 */
export function quietRuntime(
  verbose: boolean | undefined,
  metrics?: { port?: string; host?: string },
  out?: Out,
): void {
  const level = verbose ? 'INFO' : 'WARN';
  const port = portOf('--metrics-port', metrics?.port);
  if (port === undefined) {
    Runtime.install({ logger: workerLogger(level) });
    return;
  }
  const url = installMetricsRuntime({ port, ...(metrics?.host && { host: metrics.host }) }, level);
  out?.(`metrics ${url}`);
}
