/**
 * The process's OpenTelemetry tracer provider: spans batched to an OTLP/HTTP endpoint, the W3C propagators, and an
 * AsyncLocalStorage context manager so that what a slice calls (tools, `ctx.send`, RAP dispatches) runs inside the
 * slice's span. Installed once per process, like the Temporal runtime, and only when tracing is on.
 */
import { type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, type IResource, Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { DEFAULT_SERVICE_NAME, resolveTracing, type TracingOption, type TracingOptions } from './config';

/** The installed tracing of this process. */
export interface Tracing {
  /** What it was installed with. */
  readonly options: TracingOptions;
  /** `service.name` and the SDK's resource attributes, for spans made in workflow sandboxes too. */
  readonly resource: IResource;
  /** The batching processor in front of the OTLP exporter; workflow spans come to it through a sink. */
  readonly spanProcessor: SpanProcessor;
  /** The runtime's own tracer (slice and RAP callback spans). */
  readonly tracer: Tracer;
  /** Exports every span ended so far (a worker's shutdown calls it; so should a short-lived process before it exits). */
  flush(): Promise<void>;
}

/** The tracer name of the runtime's own spans. */
export const TRACER_NAME = 'infinity-temporal';

let installed: Tracing | undefined;

/** The tracing this process installed, if any. */
export const installedTracing = (): Tracing | undefined => installed;

/**
 * Installs tracing for this process, or returns what an earlier call installed with the same options. The tracer
 * provider is global (OpenTelemetry allows one per process), so other options than the first call's are refused.
 */
export function installTracing(options: TracingOptions = {}): Tracing {
  if (installed) {
    if (JSON.stringify(installed.options) !== JSON.stringify(options)) {
      throw new TypeError(
        `tracing is already installed in this process with other options (${JSON.stringify(installed.options)})`,
      );
    }
    return installed;
  }
  const serviceName = options.serviceName ?? process.env.OTEL_SERVICE_NAME?.trim() ?? DEFAULT_SERVICE_NAME;
  // OTEL_RESOURCE_ATTRIBUTES still apply; the service name is ours unless the caller or OTEL_SERVICE_NAME says.
  const resource = Resource.default()
    .merge(envDetectorSync.detect())
    .merge(new Resource({ 'service.name': serviceName || DEFAULT_SERVICE_NAME }));
  // Without a URL the exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT / _HEADERS / _TIMEOUT itself.
  const exporter = new OTLPTraceExporter({
    ...(options.endpoint && { url: options.endpoint }),
    ...(options.headers && { headers: options.headers }),
  });
  // OTEL_BSP_* tune the batches; OTEL_TRACES_SAMPLER the sampler (the provider reads them).
  const spanProcessor = new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
  installed = {
    options,
    resource,
    spanProcessor,
    tracer: trace.getTracer(TRACER_NAME),
    flush: () => provider.forceFlush(),
  };
  return installed;
}

/** The tracing a `tracing` option asks for (`undefined`: the environment decides), installed; none when off. */
export function tracingFor(option?: TracingOption): Tracing | undefined {
  const options = resolveTracing(option);
  return options && installTracing(options);
}
