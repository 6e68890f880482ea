/**
 * One completion of a slice (reference spec §2.5–2.6): rounds of model calls, the turn buffer, retries, and the
 * handling of the first tool call of each round. Sync tools, unknown tools and invalid arguments are answered
 * inline and loop back; an async tool call ends the completion and is dispatched by the caller after the commit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { messageIds } from '../core/ids';
import {
  INJECTED_TOOL_ERROR,
  INJECTED_TOOL_NAME,
  invalidArgumentsError,
  invalidJsonArgumentsError,
  unknownToolError,
} from '../core/texts';
import { addUsage, type HistoryItem, type ThreadEvent, type TokenUsage, type ToolResultContent } from '../core/types';
import { projectHistory } from '../model/projection';
import type { ModelProvider, ModelStreamPart, ToolSpec } from '../model/provider';
import type { Tool, ToolContext } from '../tools/tool';
import { BUILTIN_TOOLS, type BuiltinCallContext, runBuiltinTool } from '../core/builtins';
import type { RuntimeAction } from '../core/slice-protocol';
import { classifyFailure, type CompletionPolicy, messageOf, StreamWatchdog } from './retry';
import { TurnBuffer } from './turn-buffer';

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
}

export interface AsyncCall {
  id: string;
  name: string;
  args: unknown;
  passive: boolean;
}

export interface CompletionOutput {
  buffer: TurnBuffer;
  asyncCall?: AsyncCall;
  answeredCallIds: string[];
  /** Summed over the slice's model rounds. */
  usage?: TokenUsage;
  /** Usage of the last round alone: how full the context window was. */
  lastRoundUsage?: TokenUsage;
  error?: string;
  interrupted: boolean;
  /** A runtime tool for the workflow to carry out; its call is `asyncCall`. */
  action?: RuntimeAction;
  cancelledSubscriptions: string[];
}

type Distributive<T> = T extends unknown ? Omit<T, 'threadId'> : never;
type EventBody = Distributive<ThreadEvent>;

export { type CompletionPolicy, DEFAULT_COMPLETION_POLICY } from './retry';

export async function runCompletion(input: CompletionInput): Promise<CompletionOutput> {
  const { policy, signal } = input;
  const buffer = new TurnBuffer(input.sliceId);
  const out: CompletionOutput = { buffer, answeredCallIds: [], interrupted: false, cancelledSubscriptions: [] };
  const emit = (e: EventBody) => input.emit({ ...e, threadId: input.threadId } as ThreadEvent);
  const builtins = input.runtime ? BUILTIN_TOOLS : [];
  const builtinByName = new Map(builtins.map((b) => [b.name, b]));
  const specs: ToolSpec[] = [...input.tools.values(), ...builtins].map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
  }));
  let syncResults = 0;

  /** Answers a call inline with a result item; the model is invoked again. */
  const answer = (callId: string, messageId: string, content: ToolResultContent[]) => {
    buffer.pushFlushed(messageId, { kind: 'tool_result', id: callId, content });
    out.answeredCallIds.push(callId);
  };
  const text = (t: string): ToolResultContent[] => [{ type: 'text', text: t }];

  /** Handles the first tool call of a round; returns true when the model must be invoked again. */
  const onToolCall = async (call: Extract<ModelStreamPart, { type: 'tool-call' }>): Promise<boolean> => {
    let args: unknown = {};
    let jsonError: string | undefined;
    try {
      args = call.input.trim() === '' ? {} : JSON.parse(call.input);
    } catch (e) {
      jsonError = `${messageOf(e)} (received: ${call.input.slice(0, 200)})`;
    }
    buffer.push({ kind: 'tool_call', id: call.id, name: call.name, args });
    buffer.flush();
    if (call.name === INJECTED_TOOL_NAME) {
      answer(call.id, messageIds.unknownTool(call.id), text(INJECTED_TOOL_ERROR));
      return true;
    }
    const builtin = builtinByName.get(call.name);
    if (builtin && input.runtime && !jsonError) {
      emit({ type: 'tool_call', id: call.id, name: call.name, args });
      const outcome = await runBuiltinTool(call.name, args, call.id, input.runtime);
      if (!('result' in outcome)) {
        if ('action' in outcome) out.action = outcome.action;
        out.asyncCall = { id: call.id, name: call.name, args, passive: builtin.passive };
        return false;
      }
      if (outcome.cancelledSubscription) out.cancelledSubscriptions.push(outcome.cancelledSubscription);
      emit({ type: 'tool_result', toolCallId: call.id, text: outcome.result });
      answer(call.id, messageIds.syncResult(call.id, syncResults++), text(outcome.result));
      return true;
    }
    const tool = input.tools.get(call.name);
    if (!tool && !builtin) {
      answer(call.id, messageIds.unknownTool(call.id), text(unknownToolError(call.name)));
      return true;
    }
    const schemaError = tool?.validate(args);
    const invalid = jsonError
      ? invalidJsonArgumentsError(call.name, jsonError)
      : schemaError && invalidArgumentsError(call.name, schemaError);
    if (invalid) {
      emit({ type: 'tool_call', id: call.id, name: call.name, args });
      emit({ type: 'tool_result', toolCallId: call.id, text: invalid });
      answer(call.id, messageIds.invalidArgs(call.id), text(invalid));
      return true;
    }
    if (!tool) throw new Error(`unreachable: ${call.name}`);
    emit({ type: 'tool_call', id: call.id, name: call.name, args });
    if (!tool.sync) {
      out.asyncCall = { id: call.id, name: call.name, args, passive: tool.passive };
      return false;
    }
    let content: ToolResultContent[];
    try {
      const r = await tool.execute(args, input.toolContext(call.id, call.name));
      content = typeof r === 'string' ? text(r) : Array.isArray(r) ? r : text('');
    } catch (e) {
      content = text(`Error: ${messageOf(e)}`);
    }
    emit({ type: 'tool_result', toolCallId: call.id, text: content.find((c) => c.type === 'text')?.text ?? '' });
    answer(call.id, messageIds.syncResult(call.id, syncResults++), content);
    return true;
  };

  type RoundEnd = 'loop' | 'done' | 'interrupted' | { error: string };

  const runRound = async (): Promise<RoundEnd> => {
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
      const request = {
        threadId: input.threadId,
        system: input.system,
        messages: projectHistory([...input.history, ...buffer.flushed.map((s) => s.item)], { images: input.model.supportsImages !== false }),
        tools: specs,
      };
      const iterator = input.model.stream(request, attempt.signal)[Symbol.asyncIterator]();
      const watchdog = new StreamWatchdog(signal, policy.initiateTimeoutMs);
      let received = false;
      let failure: unknown;
      try {
        for (;;) {
          const next = await watchdog.next(iterator.next(), received ? policy.chunkTimeoutMs : policy.initiateTimeoutMs);
          if (next.done) break;
          received = true;
          retries = 0;
          const part = next.value;
          if (part.type === 'finish') {
            endThinking();
            buffer.flush();
            if (part.usage) {
              out.usage = addUsage(out.usage, part.usage);
              out.lastRoundUsage = part.usage;
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
              if (part.providerMetadata) buffer.push({ kind: 'reasoning', text: part.text, providerMetadata: part.providerMetadata });
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
        void iterator.return?.()?.catch(() => undefined);
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
      if (retries >= policy.maxRetries) return giveUp(decision.giveUpError);
      if (decision.retry === false) return giveUp(decision.giveUpError);
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
  };

  for (let round = 0; ; round++) {
    if (round >= policy.maxRounds) {
      out.error = `stopped after ${policy.maxRounds} model rounds in one slice`;
      break;
    }
    const end = await runRound();
    if (end === 'loop') continue;
    if (end === 'interrupted') out.interrupted = true;
    else if (end !== 'done') out.error = end.error;
    break;
  }
  if (out.error) emit({ type: 'info', text: `Error: ${out.error}` });
  return out;
}
