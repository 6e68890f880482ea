/**
 * When tracing is on, and where its spans go. Opt-in: the standard `OTEL_*` variables turn it on, or an explicit
 * option does; without either nothing is installed and nothing is paid.
 */

/** OpenTelemetry tracing of threads: spans exported over OTLP/HTTP (docs/operations.md, "Traces"). */
export interface TracingOptions {
  /**
   * The OTLP/HTTP traces URL, e.g. `http://127.0.0.1:4318/v1/traces`.
   * @default `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else
   * `http://localhost:4318/v1/traces` (the exporter's own reading of the environment)
   */
  endpoint?: string;
  /**
   * Headers on every export request (e.g. an API key).
   * @default `OTEL_EXPORTER_OTLP_TRACES_HEADERS` / `OTEL_EXPORTER_OTLP_HEADERS`
   */
  headers?: Record<string, string>;
  /**
   * The `service.name` resource attribute of every span this process exports.
   * @default `OTEL_SERVICE_NAME`, else `'infinity-temporal-worker'`
   */
  serviceName?: string;
}

/** What a `tracing` option may say: `true` (on, configured by the environment), `false` (off), or options (on). */
export type TracingOption = boolean | TracingOptions;

/** The service name when neither the option nor `OTEL_SERVICE_NAME` gives one. */
export const DEFAULT_SERVICE_NAME = 'infinity-temporal-worker';

type Env = Record<string, string | undefined>;

/**
 * Is tracing asked for by the environment? Yes when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER` names `otlp`; never when `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none`.
 */
export function tracingFromEnv(env: Env = process.env): TracingOptions | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return undefined;
  const endpoint = !!(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
  return endpoint || exporters.includes('otlp') ? {} : undefined;
}

/** The tracing an option resolves to: `undefined` (not given) defers to the environment. */
export function resolveTracing(option: TracingOption | undefined, env: Env = process.env): TracingOptions | undefined {
  if (option === undefined) return tracingFromEnv(env);
  if (option === false) return undefined;
  return option === true ? {} : option;
}
