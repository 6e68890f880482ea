/**
 * The benchmark and demo model: every completion streams ~1.2 KB. After a user message it calls a tool (the first
 * of the tools it is offered, unless told which); after a tool result it answers and ends the turn. No network, no
 * randomness in the text.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUILTIN_TOOL_NAMES } from '../core/builtins';
import { firstText } from './projection';
import type { ModelProvider, ModelRequest, ModelStreamPart, ToolSpec } from './provider';

export interface SimulatedModelOptions {
  /**
   * The tool called after a user message, whether or not the worker has it (an unknown tool gets an error result the
   * model reads, which some tests want).
   * @default the first of the worker's tools in the request (built-in runtime tools aside); none: no call
   */
  toolName?: string;
  /**
   * Arguments for that call, from the user's text.
   * @default from the tool's JSON Schema: each required property filled from the text (a string whose name ends in
   *   `id` gets the first number in the text, or "42"; another string the text itself; a number that number, or 1;
   *   a boolean true; an enum its first value) — `{ build_id: "42" }` for `get_build_status`
   */
  toolArgs?: (userText: string) => unknown;
  /** Approximate bytes of text per completion. @default 1200 */
  completionBytes?: number;
  /** Bytes per streamed delta. @default 60 */
  chunkBytes?: number;
  /** Pause between deltas. @default 0 */
  chunkDelayMs?: number;
}

const FILLER =
  'Checking the state of the pipeline and the recent changes that could affect it. ' +
  'The agent keeps its reasoning short and waits for tools instead of guessing. ';

function filler(bytes: number, lead: string): string {
  let s = lead;
  while (s.length < bytes) s += FILLER;
  return s.slice(0, bytes);
}

interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
}

/** Arguments a tool's schema accepts, filled from the user's text (see {@link SimulatedModelOptions.toolArgs}). */
export function simulatedArgs(parameters: Record<string, unknown> | undefined, userText: string): unknown {
  const properties = (parameters?.properties ?? {}) as Record<string, PropertySchema>;
  const required = Array.isArray(parameters?.required) ? (parameters.required as string[]) : [];
  const number = /\d+/.exec(userText)?.[0];
  const args: Record<string, unknown> = {};
  for (const name of required) {
    const schema = properties[name] ?? {};
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    if (schema.enum?.length) args[name] = schema.enum[0];
    else if (type === 'string') args[name] = /id$/i.test(name) ? (number ?? '42') : userText;
    else if (type === 'number' || type === 'integer') args[name] = number === undefined ? 1 : Number(number);
    else if (type === 'boolean') args[name] = true;
    else if (type === 'array') args[name] = [];
    else if (type === 'object') args[name] = {};
  }
  return args;
}

export class SimulatedModel implements ModelProvider {
  readonly id = 'simulated';
  readonly contextWindow = 200_000;
  private readonly opts: Omit<Required<SimulatedModelOptions>, 'toolName' | 'toolArgs'> &
    Pick<SimulatedModelOptions, 'toolName' | 'toolArgs'>;

  constructor(options: SimulatedModelOptions = {}) {
    this.opts = {
      ...(options.toolName !== undefined && { toolName: options.toolName }),
      ...(options.toolArgs && { toolArgs: options.toolArgs }),
      completionBytes: options.completionBytes ?? 1200,
      chunkBytes: options.chunkBytes ?? 60,
      chunkDelayMs: options.chunkDelayMs ?? 0,
    };
  }

  /** The tool to call: the one named in the options, else the first the worker offers (a newcomer's own tool). */
  private toolFor(request: ModelRequest): { name: string; spec?: ToolSpec } | undefined {
    const offered = request.tools.filter((t) => !BUILTIN_TOOL_NAMES.has(t.name));
    if (this.opts.toolName !== undefined) {
      const name = this.opts.toolName;
      const spec = request.tools.find((t) => t.name === name);
      return spec ? { name, spec } : { name };
    }
    const spec = offered[0];
    return spec && { name: spec.name, spec };
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const last = request.messages[request.messages.length - 1];
    const afterTool = last?.role === 'tool_result';
    const tool = afterTool ? undefined : this.toolFor(request);
    const lead = afterTool
      ? `The tool answered: ${firstText(last.content)}. `
      : tool
        ? `I will call ${tool.name} to find out. `
        : 'I have no tool to call, so I answer from what I know. ';
    const text = filler(this.opts.completionBytes, lead);
    for (let i = 0; i < text.length; i += this.opts.chunkBytes) {
      if (this.opts.chunkDelayMs > 0) await sleep(this.opts.chunkDelayMs, undefined, { signal });
      signal.throwIfAborted();
      yield { type: 'text-delta', text: text.slice(i, i + this.opts.chunkBytes) };
    }
    if (tool) {
      const userText = last?.role === 'user' ? last.text : '';
      const id = `sim_${randomUUID()}`;
      const args = this.opts.toolArgs ? this.opts.toolArgs(userText) : simulatedArgs(tool.spec?.parameters, userText);
      yield { type: 'tool-call', id, name: tool.name, input: JSON.stringify(args) };
    }
    const outputTokens = Math.ceil(text.length / 4);
    yield { type: 'finish', usage: { inputTokens: 100, outputTokens, totalTokens: 100 + outputTokens } };
  }
}
