/**
 * The benchmark model: every completion streams ~1.2 KB. After a user message it calls a tool; after a tool
 * result it answers and ends the turn. No network, no randomness in the text.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { firstText } from './projection';
import type { ModelProvider, ModelRequest, ModelStreamPart } from './provider';

export interface SimulatedModelOptions {
  /** The tool called after a user message (default `get_build_status`). */
  toolName?: string;
  /** Arguments for that call, from the user's text (default `{ build_id: <first number in the text, or "42"> }`). */
  toolArgs?: (userText: string) => unknown;
  /** Approximate bytes of text per completion (default 1200). */
  completionBytes?: number;
  /** Bytes per streamed delta (default 60). */
  chunkBytes?: number;
  /** Pause between deltas (default 0). */
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

export class SimulatedModel implements ModelProvider {
  readonly id = 'simulated';
  readonly contextWindow = 200_000;
  private readonly opts: Required<SimulatedModelOptions>;

  constructor(options: SimulatedModelOptions = {}) {
    this.opts = {
      toolName: options.toolName ?? 'get_build_status',
      toolArgs: options.toolArgs ?? ((text) => ({ build_id: /\d+/.exec(text)?.[0] ?? '42' })),
      completionBytes: options.completionBytes ?? 1200,
      chunkBytes: options.chunkBytes ?? 60,
      chunkDelayMs: options.chunkDelayMs ?? 0,
    };
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const last = request.messages[request.messages.length - 1];
    const afterTool = last?.role === 'tool_result';
    const lead = afterTool
      ? `The tool answered: ${firstText(last.content)}. `
      : `I will call ${this.opts.toolName} to find out. `;
    const text = filler(this.opts.completionBytes, lead);
    for (let i = 0; i < text.length; i += this.opts.chunkBytes) {
      if (this.opts.chunkDelayMs > 0) await sleep(this.opts.chunkDelayMs, undefined, { signal });
      signal.throwIfAborted();
      yield { type: 'text-delta', text: text.slice(i, i + this.opts.chunkBytes) };
    }
    if (!afterTool) {
      const userText = last?.role === 'user' ? last.text : '';
      const id = `sim_${randomUUID()}`;
      yield { type: 'tool-call', id, name: this.opts.toolName, input: JSON.stringify(this.opts.toolArgs(userText)) };
    }
    const outputTokens = Math.ceil(text.length / 4);
    yield { type: 'finish', usage: { inputTokens: 100, outputTokens, totalTokens: 100 + outputTokens } };
  }
}
