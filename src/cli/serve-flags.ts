/**
 * The flags `dev` and `worker` share, and what they mean: the model, resource targets, provider limits, metrics, live
 * events, and the tool servers. A value that cannot be used is a usage error before anything starts.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { limitsProblem, type ProviderLimits } from '../core/capacity';
import type { ResourceTargets } from '../worker/resource-targets';
import { modelRegistry } from './lazy';
import { CliError } from './errors';

export interface ServeOptions {
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

/** The model of `--model`, else of the environment; the providers load only here, in the commands that serve. */
export const modelOf = (opts: ServeOptions) => {
  const { modelFromEnv, modelFromSpec } = modelRegistry();
  return opts.model ? modelFromSpec(opts.model) : modelFromEnv();
};

/** A TCP port flag: a whole number in 1..65535, or a usage error. */
export function portOf(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535)
    throw new CliError(`${flag} must be a port number (1-65535), got '${value}'`);
  return port;
}

/** A fraction flag (`--cpu-target 0.7`, or a percentage `70%`): a number in (0, 1], or a usage error. */
function fractionOf(flag: string, value: string): number {
  const n = value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : Number(value);
  if (!/^\d*\.?\d+%?$/.test(value) || !(n > 0 && n <= 1))
    throw new CliError(`${flag} must be a fraction of the machine in (0, 1] such as 0.7 or 70%, got '${value}'`);
  return n;
}

/** `--cpu-target` / `--memory-target` → the worker's resource targets (decision 64). */
export function resourceTargetsOf(opts: ServeOptions): { resourceTargets?: ResourceTargets } {
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
export function limitsOf(opts: ServeOptions): { limits?: ProviderLimits } {
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
export function limitsLine(limits: ProviderLimits, modelId: string): string {
  const parts = [`key ${limits.key ?? modelId}`];
  if (limits.rpm !== undefined) parts.push(`${limits.rpm} requests/min`);
  if (limits.tpm !== undefined) parts.push(`${limits.tpm} tokens/min`);
  if (limits.concurrency !== undefined) parts.push(`${limits.concurrency} at once`);
  return `provider limits · ${parts.join(' · ')}`;
}

export function serveOptions(cmd: Command): Command {
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
