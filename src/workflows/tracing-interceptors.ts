/**
 * The thread workflow's tracing interceptors (a workflow interceptor module, bundled only when tracing is on:
 * `tracingWorkflowModules()`). Temporal's OpenTelemetry interceptors, plus two things a long-lived thread needs:
 *
 * - **Turns, not runs.** Temporal's interceptors parent what a workflow schedules on its `RunWorkflow` span, which
 *   for a thread is the start of its first turn and stays open for its whole run. Here every activity, child start
 *   and signal the thread issues is parented on the latest input it took (its `HandleSignal:*` span, or
 *   `HandleUpdate:deliver`; each a child of the sender's span), so each user turn, tool result or report continues
 *   the trace of whoever sent it.
 * - **Determinism.** Span ids come from `Math.random()`, which in a workflow is the seeded stream that `uuid4()`
 *   (child thread ids) also draws from: spans would change the ids a thread picks, and histories recorded without
 *   tracing would not replay with it (or the other way round). Temporal's interceptors run on a named random stream
 *   of their own instead, so the workflow's own stream is the same with tracing on or off.
 *
 * Interceptors add headers, never commands: replay does not depend on them (test/tracing.test.ts replays every
 * recorded history with this module bundled).
 */
import { type Context, context } from '@opentelemetry/api';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import {
  getRandomStream,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { waitForIdleUpdate } from './definitions';

/** The name of the random stream spans draw their ids from (stable: replay derives the same stream from it). */
const SPAN_RANDOM_STREAM = 'infinity-temporal/tracing';

type Method = (input: never, next: never) => unknown;

/** `target`'s methods, each run with `Math.random()` on the spans' own stream (its `next` restores the caller's). */
function onOwnRandomStream<T extends object>(target: T): T {
  const stream = getRandomStream(SPAN_RANDOM_STREAM);
  const wrapped: Record<string, Method> = {};
  let proto: object | null = Object.getPrototypeOf(target) as object | null;
  while (proto && proto !== Object.prototype) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const fn = (target as Record<string, unknown>)[name];
      if (name === 'constructor' || typeof fn !== 'function' || name in wrapped) continue;
      wrapped[name] = (input, next) => stream.with(() => (fn as Method).call(target, input, next));
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return wrapped as T;
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  /** The context of the latest input this run took: what it does next belongs to that turn. */
  let turn: Context | undefined;
  const inTurn = <T>(fn: () => T): T => (turn ? context.with(turn, fn) : fn());

  // Runs inside Temporal's HandleSignal / HandleUpdate span, so the active context is that span's. Every signal of a
  // thread is an input (whatever its name); of the updates, all but the read-only wait.
  const turns: WorkflowInboundCallsInterceptor = {
    handleSignal(input, next) {
      turn = context.active();
      return next(input);
    },
    handleUpdate(input, next) {
      if (input.name !== waitForIdleUpdate.name) turn = context.active();
      return next(input);
    },
  };
  // Runs before Temporal's outbound interceptor, which starts its span in the active context.
  const inTurns: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => inTurn(() => next(input)),
    scheduleLocalActivity: (input, next) => inTurn(() => next(input)),
    startChildWorkflowExecution: (input, next) => inTurn(() => next(input)),
    signalWorkflow: (input, next) => inTurn(() => next(input)),
    continueAsNew: (input, next) => inTurn(() => next(input)),
  };
  return {
    inbound: [onOwnRandomStream(new OpenTelemetryInboundInterceptor()), turns],
    outbound: [inTurns, onOwnRandomStream(new OpenTelemetryOutboundInterceptor())],
    internals: [onOwnRandomStream(new OpenTelemetryInternalsInterceptor())],
  };
};
