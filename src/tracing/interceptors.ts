/**
 * Temporal's OpenTelemetry interceptors, wired for this runtime: the client's (a user turn's start or signal opens its
 * trace), the activities' (`RunActivity:*`, local ones included), the workflow module (src/workflows/
 * tracing-interceptors.ts) and the sink through which workflow sandboxes hand their spans to the exporter.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientInterceptors } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { Tracing } from './install';

/**
 * The workflow interceptor modules of a traced worker. A worker that bundles its workflows on start gets them by
 * itself; a prebuilt bundle must include them: `bundleWorkflowCode({ workflowsPath: threadWorkflowsPath(),
 * workflowInterceptorModules: tracingWorkflowModules() })`.
 */
export function tracingWorkflowModules(): string[] {
  const base = join(__dirname, '..', 'workflows', 'tracing-interceptors');
  return [existsSync(`${base}.ts`) ? `${base}.ts` : `${base}.js`];
}

/**
 * Interceptors for a Temporal `Client` whose calls should start or continue traces: `new Client({ connection,
 * interceptors: tracingClientInterceptors() })`.
 */
export function tracingClientInterceptors(): ClientInterceptors {
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/** A traced worker's interceptors and sinks; `workflowModules` only when the worker bundles its workflows itself. */
export function tracingWorkerOptions(
  tracing: Tracing,
  bundles: boolean,
): { interceptors: WorkerInterceptors; sinks: InjectedSinks<OpenTelemetrySinks> } {
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      ...(bundles && { workflowModules: tracingWorkflowModules() }),
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}

/** `extra`'s interceptors after `base`'s (a worker's own options keep working with tracing on). */
export function mergeWorkerInterceptors(
  base: WorkerInterceptors,
  extra: WorkerInterceptors | undefined,
): WorkerInterceptors {
  if (!extra) return base;
  return {
    ...base,
    ...extra,
    activity: [...(base.activity ?? []), ...(extra.activity ?? [])],
    workflowModules: [...(base.workflowModules ?? []), ...(extra.workflowModules ?? [])],
  };
}
