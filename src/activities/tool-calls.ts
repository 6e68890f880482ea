/**
 * The first tool call of a completion round, handled as the original runtime does (docs/semantics.md): a direct call
 * of the injected-event tool, an unknown tool or invalid arguments get an error result and the model goes on; a sync
 * tool (and a built-in one answered inline) gets its result and the model goes on; an async tool or a built-in that
 * needs the workflow ends the completion, to be dispatched after the commit.
 */
import { messageIds } from '../core/ids';
import { type BuiltinCallContext, BUILTIN_TOOLS, runBuiltinTool, type SpawnableAgent } from '../core/builtins';
import { spawnThreadSpec } from '../core/builtins/threads';
import type { RuntimeAction } from '../core/slice-protocol';
import {
  INJECTED_TOOL_ERROR,
  INJECTED_TOOL_NAME,
  invalidArgumentsError,
  invalidJsonArgumentsError,
  unknownToolError,
} from '../core/texts';
import type { ThreadEvent, ToolResultContent } from '../core/types';
import type { ModelStreamPart, ToolSpec } from '../model/provider';
import type { Tool, ToolContext } from '../tools/tool';
import { messageOf } from './retry';
import type { TurnBuffer } from './turn-buffer';

type Distributive<T> = T extends unknown ? Omit<T, 'threadId'> : never;
/** A thread event without its thread id, which the completion adds. */
export type EventBody = Distributive<ThreadEvent>;

export interface AsyncCall {
  id: string;
  name: string;
  args: unknown;
  passive: boolean;
}

/** What the handled calls of one completion leave for the slice. */
export interface ToolCallOutcomes {
  /** The call that ended the completion, to dispatch after the commit (or, with `action`, for the workflow). */
  asyncCall?: AsyncCall;
  /** A built-in tool for the workflow to carry out; its call is `asyncCall`. */
  action?: RuntimeAction;
  /** Calls answered inline, in order. */
  answeredCallIds: string[];
  cancelledSubscriptions: string[];
}

export interface ToolCallDeps {
  tools: ReadonlyMap<string, Tool>;
  /** Enables the built-in runtime tools (advertised after the user's tools). */
  runtime?: BuiltinCallContext;
  buffer: TurnBuffer;
  out: ToolCallOutcomes;
  emit(event: EventBody): void;
  toolContext(toolCallId: string, toolName: string): ToolContext;
}

/** The tools the model is offered: the worker's, then the built-in ones when the thread has them. */
export function toolSpecs(
  tools: ReadonlyMap<string, Tool>,
  runtime: boolean,
  spawnable: readonly SpawnableAgent[] = [],
): ToolSpec[] {
  const builtins = runtime
    ? BUILTIN_TOOLS.map((b) => (b.name === 'spawn_thread' && spawnable.length > 0 ? spawnThreadSpec(spawnable) : b))
    : [];
  return [...tools.values(), ...builtins].map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
  }));
}

const text = (t: string): ToolResultContent[] => [{ type: 'text', text: t }];

/** A handler for the first tool call of each round; it resolves true when the model must be invoked again. */
export function toolCallHandler(
  deps: ToolCallDeps,
): (call: Extract<ModelStreamPart, { type: 'tool-call' }>) => Promise<boolean> {
  const { buffer, out, emit, runtime } = deps;
  const builtinByName = new Map((runtime ? BUILTIN_TOOLS : []).map((b) => [b.name, b]));
  let syncResults = 0;

  /** Answers a call inline with a result item; the model is invoked again. */
  const answer = (callId: string, messageId: string, content: ToolResultContent[]) => {
    buffer.pushFlushed(messageId, { kind: 'tool_result', id: callId, content });
    out.answeredCallIds.push(callId);
    return true;
  };
  /** Answers a call whose arguments are invalid: the model reads why and is invoked again. */
  const invalidArgs = (call: { id: string; name: string }, args: unknown, error: string) => {
    emit({ type: 'tool_call', id: call.id, name: call.name, args });
    emit({ type: 'tool_result', toolCallId: call.id, text: error });
    return answer(call.id, messageIds.invalidArgs(call.id), text(error));
  };

  return async (call) => {
    let args: unknown = {};
    let jsonError: string | undefined;
    try {
      args = call.input.trim() === '' ? {} : JSON.parse(call.input);
    } catch (e) {
      jsonError = `${messageOf(e)} (received: ${call.input.slice(0, 200)})`;
    }
    buffer.push({ kind: 'tool_call', id: call.id, name: call.name, args });
    buffer.flush();
    if (call.name === INJECTED_TOOL_NAME)
      return answer(call.id, messageIds.unknownTool(call.id), text(INJECTED_TOOL_ERROR));

    const builtin = builtinByName.get(call.name);
    if (builtin && runtime && !jsonError) {
      emit({ type: 'tool_call', id: call.id, name: call.name, args });
      const outcome = await runBuiltinTool(call.name, args, call.id, runtime);
      if (!('result' in outcome)) {
        if ('action' in outcome) out.action = outcome.action;
        out.asyncCall = { id: call.id, name: call.name, args, passive: builtin.passive };
        return false;
      }
      if (outcome.cancelledSubscription) out.cancelledSubscriptions.push(outcome.cancelledSubscription);
      emit({ type: 'tool_result', toolCallId: call.id, text: outcome.result });
      return answer(call.id, messageIds.syncResult(call.id, syncResults++), text(outcome.result));
    }

    const tool = deps.tools.get(call.name);
    if (!tool && !builtin) {
      // Shown live like any call, so a tool the worker lacks is on screen with its error (issue 30 item 5).
      const error = unknownToolError(call.name);
      emit({ type: 'tool_call', id: call.id, name: call.name, args });
      emit({ type: 'tool_result', toolCallId: call.id, text: error });
      return answer(call.id, messageIds.unknownTool(call.id), text(error));
    }
    if (jsonError) return invalidArgs(call, args, invalidJsonArgumentsError(call.name, jsonError));
    const schemaError = tool?.validate(args);
    if (schemaError) return invalidArgs(call, args, invalidArgumentsError(call.name, schemaError));
    if (!tool) throw new Error(`unreachable: ${call.name}`);

    emit({ type: 'tool_call', id: call.id, name: call.name, args });
    if (!tool.sync) {
      out.asyncCall = { id: call.id, name: call.name, args, passive: tool.passive };
      return false;
    }
    let content: ToolResultContent[];
    try {
      const r = await tool.execute(args, deps.toolContext(call.id, call.name));
      content = typeof r === 'string' ? text(r) : Array.isArray(r) ? r : text('');
    } catch (e) {
      content = text(`Error: ${messageOf(e)}`);
    }
    emit({ type: 'tool_result', toolCallId: call.id, text: content.find((c) => c.type === 'text')?.text ?? '' });
    return answer(call.id, messageIds.syncResult(call.id, syncResults++), content);
  };
}
