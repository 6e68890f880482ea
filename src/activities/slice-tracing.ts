/**
 * One span per slice attempt (`Slice:<kind>`), a child of the activity's `RunActivity:runSliceLocal` / `runSlice`
 * span, carrying what the slice knows: thread, slice, model, tokens, the tools it called and how it ended. Only a
 * worker with tracing on passes one to the slices (`SliceDependencies.tracing`); without it nothing here runs.
 *
 * The span is active while the attempt runs, so what the slice calls — tools, `ctx.send`, a RAP dispatch — runs in it
 * and carries its context on (signals through the client interceptor, RAP through the callback URL: decision 61).
 */
import { type Attributes, type Span, SpanStatusCode, context, trace, type Tracer } from '@opentelemetry/api';
import type { SliceInput, SliceResult } from '../core/slice-protocol';
import type { StoredItem } from '../core/types';

/** Span attribute names of a slice (docs/operations.md, "Traces"). */
export const SLICE_ATTRIBUTES = {
  threadId: 'infinity.thread_id',
  threadKind: 'infinity.thread_kind',
  sliceId: 'infinity.slice_id',
  local: 'infinity.local',
  model: 'infinity.model',
  tokensInput: 'infinity.tokens.input',
  tokensOutput: 'infinity.tokens.output',
  /** The last tool the model called in this slice (the one the thread now waits for, if async). */
  tool: 'infinity.tool',
  /** Every tool called in this slice, in order. */
  toolCalls: 'infinity.tool_calls',
  /** The runtime tool the workflow carries out next: spawn, report, close, message_child, sleep. */
  action: 'infinity.action',
  /** committed · interrupted · model_error · already_committed · abandoned · failed */
  outcome: 'infinity.outcome',
  /** The failure type of a failed or abandoned attempt. */
  error: 'infinity.error',
} as const;

/** How a slice attempt ended. */
export type SliceOutcome = 'committed' | 'interrupted' | 'model_error' | 'already_committed' | 'abandoned' | 'failed';

export interface SliceTracing {
  /** Runs one attempt of a slice inside its own span, made active for everything the attempt calls. */
  run(input: SliceInput, attempt: () => Promise<SliceResult>): Promise<SliceResult>;
  /** The running attempt committed `items` with `result` (called inside {@link run}). */
  committed(result: SliceResult, items: readonly StoredItem[]): void;
}

/** The failure type of an activity error (`ApplicationFailure.type`), else the error's name. */
const errorType = (e: unknown): string => {
  if (!(e instanceof Error)) return 'unknown';
  const type = (e as { type?: unknown }).type;
  return typeof type === 'string' && type !== '' ? type : e.name;
};

export function sliceTracing(tracer: Tracer, modelId: string): SliceTracing {
  /** Spans whose attempt reached its commit; the others returned an earlier commit (a retry) or failed. */
  const committedSpans = new WeakSet<Span>();
  return {
    async run(input, attempt) {
      const attributes: Attributes = {
        [SLICE_ATTRIBUTES.threadId]: input.threadId,
        [SLICE_ATTRIBUTES.threadKind]: input.kind,
        [SLICE_ATTRIBUTES.sliceId]: input.sliceId,
        [SLICE_ATTRIBUTES.local]: input.local === true,
        [SLICE_ATTRIBUTES.model]: modelId,
      };
      const span = tracer.startSpan(`Slice:${input.kind}`, { attributes });
      try {
        const result = await context.with(trace.setSpan(context.active(), span), attempt);
        if (!committedSpans.has(span))
          span.setAttribute(SLICE_ATTRIBUTES.outcome, 'already_committed' satisfies SliceOutcome);
        span.setStatus({ code: SpanStatusCode.OK });
        return result;
      } catch (e) {
        const type = errorType(e);
        const outcome: SliceOutcome = type === 'SliceAbandoned' || type === 'CancelledFailure' ? 'abandoned' : 'failed';
        span.setAttributes({ [SLICE_ATTRIBUTES.outcome]: outcome, [SLICE_ATTRIBUTES.error]: type });
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        throw e;
      } finally {
        span.end();
      }
    },
    committed(result, items) {
      const span = trace.getActiveSpan();
      if (!span) return;
      committedSpans.add(span);
      const tools = items.flatMap(({ item }) => (item.kind === 'tool_call' ? [item.name] : []));
      const outcome: SliceOutcome = result.interrupted ? 'interrupted' : result.error ? 'model_error' : 'committed';
      span.setAttributes({
        [SLICE_ATTRIBUTES.outcome]: outcome,
        ...(result.usage?.inputTokens !== undefined && { [SLICE_ATTRIBUTES.tokensInput]: result.usage.inputTokens }),
        ...(result.usage?.outputTokens !== undefined && { [SLICE_ATTRIBUTES.tokensOutput]: result.usage.outputTokens }),
        ...(tools.length > 0 && {
          [SLICE_ATTRIBUTES.tool]: tools[tools.length - 1]!,
          [SLICE_ATTRIBUTES.toolCalls]: tools,
        }),
        ...(result.action && { [SLICE_ATTRIBUTES.action]: result.action.type }),
      });
    },
  };
}
