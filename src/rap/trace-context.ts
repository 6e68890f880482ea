/**
 * Trace context across RAP (decision 61). A dispatch carries W3C `traceparent` / `tracestate` headers, but tool
 * servers answer on the callback URL and echo nothing back, so the context the callback must continue travels in the
 * URL's signed token instead: minted inside the slice's span, the token names it, and the gateway delivers the result
 * inside a `RapCallback:*` span that is that span's child. Everything here goes through the global OpenTelemetry API:
 * with tracing off it finds no propagator and no span, and costs one lookup.
 */
import {
  type Attributes,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/** The gateway's tracer name (the same as the runtime's other spans). */
const TRACER_NAME = 'infinity-temporal';

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A well-formed W3C `traceparent`, or undefined. */
export const validTraceparent = (value: unknown): string | undefined =>
  typeof value === 'string' && TRACEPARENT.test(value) ? value : undefined;

/** The W3C trace headers of the active context (none when tracing is off or nothing is being traced). */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** The active span's `traceparent`, for a callback token minted now. */
export const activeTraceparent = (): string | undefined => validTraceparent(traceHeaders().traceparent);

/** What the gateway knows of a callback when it delivers it. */
export interface CallbackTrace {
  /** The `traceparent` its token carries: the span of the slice that dispatched the call. */
  traceparent?: string;
  /** A `traceparent` the tool server sent on the callback request, if any: linked, not followed. */
  requestTraceparent?: string;
  threadId: string;
  callId: string;
  /** The RAP callback type (`tool_result`, `subscription_event`, ...). */
  type: string;
}

/**
 * Runs a callback's delivery inside a `RapCallback:<type>` span. A result or prompt continues the dispatch's trace (it
 * belongs to the same turn); a subscription event, which may come days later and many times, starts a trace of its
 * own that links to the dispatch. Without a traceparent in the token (tracing off when it was minted) it just runs.
 */
export async function inCallbackSpan<T>(cb: CallbackTrace, deliver: () => Promise<T>): Promise<T> {
  if (!cb.traceparent) return deliver();
  const dispatch = propagation.extract(ROOT_CONTEXT, { traceparent: cb.traceparent });
  const dispatchSpan = trace.getSpanContext(dispatch);
  const links: Link[] = [];
  const requested =
    cb.requestTraceparent &&
    trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent: cb.requestTraceparent }));
  if (requested) links.push({ context: requested });
  const ownTrace = cb.type === 'subscription_event';
  if (ownTrace && dispatchSpan) links.push({ context: dispatchSpan });
  const attributes: Attributes = {
    'infinity.thread_id': cb.threadId,
    'infinity.tool_call_id': cb.callId,
    'rap.callback_type': cb.type,
  };
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    `RapCallback:${cb.type}`,
    { kind: SpanKind.SERVER, attributes, links },
    ownTrace ? ROOT_CONTEXT : dispatch,
    async (span: Span) => {
      try {
        return await deliver();
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        throw e;
      } finally {
        span.end();
      }
    },
  );
}
