/**
 * One completion of a slice (docs/semantics.md): rounds of model calls, the turn buffer and retries. The first tool
 * call of each round is handled in tool-calls.ts: answered inline (the model goes on) or ending the completion, to be
 * dispatched by the caller after the commit. An agent's next models serve a round whose model is unavailable
 * (model-routing.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { addUsage, type HistoryItem, type ThreadEvent, type TokenUsage } from '../core/types';
import type { BuiltinCallContext } from '../core/builtins';
import { projectHistory } from '../model/projection';
import type { ModelProvider, ModelRequest, ModelStreamPart, ToolSpec } from '../model/provider';
import type { Tool, ToolContext } from '../tools/tool';
import type { ProviderReport } from '../core/capacity';
import { type CapacityGate, type CapacityLease, KeyClosed } from './capacity-gate';
import { unavailableReason, type UsageByModel } from './model-routing';
import { classifyFailure, type CompletionPolicy, isRateLimit, StreamWatchdog } from './retry';
import { type EventBody, toolCallHandler, type ToolCallOutcomes, toolSpecs } from './tool-calls';
import { TurnBuffer } from './turn-buffer';

export type { AsyncCall } from './tool-calls';

export interface CompletionInput {
  threadId: string;
  sliceId: string;
  system: string;
  /** Committed history plus the items appended by this slice. */
  history: readonly HistoryItem[];
  tools: ReadonlyMap<string, Tool>;
  model: ModelProvider;
  policy: CompletionPolicy;
  signal: AbortSignal;
  emit(event: ThreadEvent): void;
  toolContext(toolCallId: string, toolName: string): ToolContext;
  /** Enables the built-in runtime tools (advertised after the user's tools). */
  runtime?: BuiltinCallContext;
  /** Provider limits shared by the fleet (capacity-gate.ts); none without limits. */
  capacity?: CapacityGate;
  /**
   * The agent's models after `model`, in order (model-routing.ts): when a round's model is unavailable past its retry
   * policy, the same round runs on the next one, through that model's own gate; later rounds stay there. @default none
   */
  fallbacks?: readonly CompletionRoute[];
  /** A limits key closed longer than this moves the round on to the next model, if any. @default 60000 */
  closedForMs?: number;
}

/** One model of the routing list, with the gate of its own limits key. */
export interface CompletionRoute {
  model: ModelProvider;
  capacity?: CapacityGate;
}

export interface CompletionOutput extends ToolCallOutcomes {
  buffer: TurnBuffer;
  /** Summed over the slice's model rounds. */
  usage?: TokenUsage;
  /** Usage of the last round alone: how full the context window was. */
  lastRoundUsage?: TokenUsage;
  error?: string;
  interrupted: boolean;
  /** The id of the model that served the slice: its last round's (another than `input.model` after routing). */
  model: string;
  /** `usage` per model, in the order the models served. */
  usageByModel: UsageByModel;
}

const DEFAULT_CLOSED_FOR_MS = 60_000;

export { type CompletionPolicy, DEFAULT_COMPLETION_POLICY } from './retry';

/**
 * The request of one model round: the history so far (committed view, the slice's inputs, what earlier rounds flushed)
 * projected for `model`. Evals rebuild recorded requests with it (src/evals), so they are the slice's own.
 */
export function modelRequest(
  threadId: string,
  system: string,
  items: readonly HistoryItem[],
  model: Pick<ModelProvider, 'supportsImages'>,
  tools: ToolSpec[],
): ModelRequest {
  return { threadId, system, messages: projectHistory(items, { images: model.supportsImages !== false }), tools };
}

export async function runCompletion(input: CompletionInput): Promise<CompletionOutput> {
  const { policy } = input;
  const buffer = new TurnBuffer(input.sliceId);
  const routes: CompletionRoute[] = [
    { model: input.model, ...(input.capacity && { capacity: input.capacity }) },
    ...(input.fallbacks ?? []),
  ];
  let at = 0;
  const out: CompletionOutput = {
    buffer,
    answeredCallIds: [],
    interrupted: false,
    cancelledSubscriptions: [],
    model: input.model.id,
    usageByModel: [],
  };
  const emit = (e: EventBody) => input.emit({ ...e, threadId: input.threadId } as ThreadEvent);
  const specs = toolSpecs(input.tools, input.runtime !== undefined, input.runtime?.spawnable);
  const onToolCall = toolCallHandler({
    tools: input.tools,
    runtime: input.runtime,
    buffer,
    out,
    emit,
    toolContext: input.toolContext,
  });

  for (let round = 0; ;) {
    if (round >= policy.maxRounds) {
      out.error = `stopped after ${policy.maxRounds} model rounds in one slice`;
      break;
    }
    const route = routes[at]!;
    const next = routes[at + 1];
    const routeAfterMs = next ? (input.closedForMs ?? DEFAULT_CLOSED_FOR_MS) : undefined;
    const end = await runRound({ input, route, routeAfterMs, buffer, out, emit, specs, onToolCall, round });
    if (end === 'loop') {
      round++;
      continue;
    }
    if (typeof end === 'object' && 'unavailable' in end) {
      // The same round again, on the next model; nothing of it was kept (model-routing.ts).
      at++;
      out.model = next!.model.id;
      emit({ type: 'info', text: `model ${route.model.id} unavailable (${end.unavailable}): routed to ${out.model}` });
      continue;
    }
    if (end === 'interrupted') out.interrupted = true;
    else if (end !== 'done') out.error = end.error;
    break;
  }
  if (out.error) emit({ type: 'info', text: `Error: ${out.error}` });
  return out;
}

/**
 * How a round ended: the model is to be invoked again, the completion is done, interrupted, failed for good, or its
 * model is unavailable and a next one may serve it (only when `routeAfterMs` says a next one exists).
 */
type RoundEnd = 'loop' | 'done' | 'interrupted' | { error: string } | { unavailable: string };

interface Round {
  input: CompletionInput;
  /** The model serving the round, with its gate. */
  route: CompletionRoute;
  /** Set when a next model exists: the agent's `closedForMs`. */
  routeAfterMs: number | undefined;
  buffer: TurnBuffer;
  out: CompletionOutput;
  emit(e: EventBody): void;
  specs: ToolSpec[];
  onToolCall(call: Extract<ModelStreamPart, { type: 'tool-call' }>): Promise<boolean>;
  /** The round's index in the slice: the first may leave waiting for capacity to the workflow. */
  round: number;
}

/**
 * One model call with its retries: streams parts into the turn buffer and live events, hands the first tool call to
 * the handler, and classifies a failed stream (retry after a wait, or give up).
 */
async function runRound(r: Round): Promise<RoundEnd> {
  const { input, route, routeAfterMs, buffer, out, emit, specs, onToolCall, round } = r;
  const { policy, signal } = input;
  const { model, capacity } = route;
  let retries = 0;
  for (;;) {
    let thinking = false;
    let toolCallSeen = false;
    let loopBack = false;
    let finished = false;
    const endThinking = () => {
      if (thinking) emit({ type: 'thinking_ended' });
      thinking = false;
    };
    const attempt = new AbortController();
    const onAbort = () => attempt.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const request = modelRequest(
      input.threadId,
      input.system,
      [...input.history, ...buffer.flushed.map((s) => s.item)],
      model,
      specs,
    );
    let lease: CapacityLease | undefined;
    try {
      lease = await capacity?.acquire(request, round, signal, routeAfterMs);
    } catch (e) {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return 'interrupted';
      if (e instanceof KeyClosed) return { unavailable: e.message };
      throw e;
    }
    let attemptUsage: TokenUsage | undefined;
    let rateLimits: ProviderReport | undefined;
    let iterator: AsyncIterator<ModelStreamPart> | undefined;
    const watchdog = new StreamWatchdog(signal, policy.initiateTimeoutMs);
    let received = false;
    let failure: unknown;
    try {
      // Inside the try: a provider whose `stream` throws at once fails the attempt and still ends its lease.
      iterator = model.stream(request, attempt.signal)[Symbol.asyncIterator]();
      for (;;) {
        const next = await watchdog.next(iterator.next(), received ? policy.chunkTimeoutMs : policy.initiateTimeoutMs);
        if (next.done) break;
        if (!received) lease?.answered();
        received = true;
        retries = 0;
        const part = next.value;
        if (part.type === 'finish') {
          endThinking();
          buffer.flush();
          rateLimits = part.rateLimits;
          if (part.usage) {
            attemptUsage = part.usage;
            out.usage = addUsage(out.usage, part.usage);
            out.lastRoundUsage = part.usage;
            const last = out.usageByModel[out.usageByModel.length - 1];
            if (last?.model === model.id) last.usage = addUsage(last.usage, part.usage)!;
            else out.usageByModel.push({ model: model.id, usage: part.usage });
          }
          finished = true;
          break;
        }
        if (toolCallSeen) continue; // only the first tool call of a round counts
        switch (part.type) {
          case 'text-delta':
            endThinking();
            buffer.appendText(part.text);
            emit({ type: 'text_delta', text: part.text });
            break;
          case 'reasoning-delta':
            if (!thinking) emit({ type: 'thinking_started' });
            thinking = true;
            emit({ type: 'thinking_delta', text: part.text });
            break;
          case 'reasoning':
            endThinking();
            if (part.providerMetadata)
              buffer.push({ kind: 'reasoning', text: part.text, providerMetadata: part.providerMetadata });
            break;
          case 'tool-call-start':
            emit({ type: 'thinking_delta', text: `Invoking tool: ${part.name}` });
            break;
          case 'tool-call-delta':
            emit({ type: 'thinking_delta', text: part.delta });
            break;
          case 'tool-call':
            endThinking();
            toolCallSeen = true;
            loopBack = await onToolCall(part);
            break;
        }
      }
    } catch (e) {
      failure = e;
    } finally {
      watchdog.dispose();
      signal.removeEventListener('abort', onAbort);
      attempt.abort();
      void iterator?.return?.()?.catch(() => undefined);
      await lease?.release(attemptUsage, rateLimits).catch(() => undefined);
    }

    if (signal.aborted) {
      endThinking();
      buffer.flushTrimmed();
      return 'interrupted';
    }
    // A tool call that was already captured is complete even if the stream then broke: keep it.
    if (finished || toolCallSeen) {
      buffer.flush();
      return loopBack ? 'loop' : 'done';
    }
    endThinking();
    const giveUp = (error: string): RoundEnd => {
      buffer.flushTrimmed();
      return { error };
    };
    const decision = classifyFailure(failure, received, policy);
    // The whole fleet backs off on the key; the first round waits on a workflow timer, not here (capacity-gate.ts),
    // unless the key is closed longer than the agent waits for it and a next model serves (model-routing.ts).
    if (capacity && !received && isRateLimit(failure)) {
      buffer.discard();
      try {
        await capacity.rateLimited(decision.waitMs, round, lease, failure, routeAfterMs);
      } catch (e) {
        if (e instanceof KeyClosed) return { unavailable: e.message };
        throw e;
      }
    }
    if (retries >= policy.maxRetries || decision.retry === false) {
      // Past its retry policy: a next model serves the same round if this one is unavailable, its partial output
      // discarded as a retry discards it; any other failure is the slice's error.
      const unavailable = routeAfterMs !== undefined ? unavailableReason(failure, received) : undefined;
      if (unavailable === undefined) return giveUp(decision.giveUpError);
      buffer.discard();
      const attempts = retries + 1;
      return { unavailable: attempts > 1 ? `${unavailable}; ${attempts} attempts` : unavailable };
    }
    emit({ type: 'info', text: decision.info });
    const wait = decision.waitMs;
    buffer.discard();
    retries++;
    try {
      if (wait > 0) await sleep(wait, undefined, { signal });
    } catch {
      return 'interrupted';
    }
  }
}
