/**
 * A deterministic model for tests: a function decides each completion from the request it receives.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TokenUsage } from '../core/types';
import type { ModelProvider, ModelRequest, ModelStreamPart } from './provider';

/** A completion described at a high level; see {@link turnToParts}. */
export interface ScriptedTurn {
  reasoning?: string;
  text?: string;
  toolCall?: { name: string; args: unknown; id?: string };
  /** Split `text` into this many deltas. @default 1 */
  chunks?: number;
  /** Wait this long before each part. @default 0 */
  delayMs?: number;
  usage?: TokenUsage;
}

/** Parts, a turn, or an async stream of parts (to script failures mid-stream). */
export type ScriptedReply = ScriptedTurn | ModelStreamPart[] | AsyncIterable<ModelStreamPart>;

export type ScriptFn = (request: ModelRequest, call: number) => ScriptedReply | Promise<ScriptedReply>;

export function turnToParts(turn: ScriptedTurn): ModelStreamPart[] {
  const parts: ModelStreamPart[] = [];
  if (turn.reasoning) parts.push({ type: 'reasoning-delta', text: turn.reasoning });
  if (turn.text) {
    const n = Math.max(1, Math.min(turn.chunks ?? 1, turn.text.length));
    const size = Math.ceil(turn.text.length / n);
    for (let i = 0; i < turn.text.length; i += size)
      parts.push({ type: 'text-delta', text: turn.text.slice(i, i + size) });
  }
  if (turn.toolCall) {
    const id = turn.toolCall.id ?? `call_${randomUUID()}`;
    const input = JSON.stringify(turn.toolCall.args ?? {});
    parts.push({ type: 'tool-call-start', id, name: turn.toolCall.name });
    parts.push({ type: 'tool-call-delta', id, delta: input });
    parts.push({ type: 'tool-call', id, name: turn.toolCall.name, input });
  }
  parts.push({ type: 'finish', usage: turn.usage ?? { inputTokens: 10, outputTokens: 10, totalTokens: 20 } });
  return parts;
}

function isTurn(r: ScriptedReply): r is ScriptedTurn {
  return !Array.isArray(r) && !(Symbol.asyncIterator in (r as object));
}

/**
 * `new ScriptedModel((request, call) => ({ text: 'hi' }))`. Every request is recorded in {@link requests}
 * so tests can assert exactly what the model was shown.
 */
export class ScriptedModel implements ModelProvider {
  readonly id = 'scripted';
  readonly requests: ModelRequest[] = [];

  constructor(
    private readonly script: ScriptFn,
    readonly contextWindow?: number,
  ) {}

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamPart> {
    const call = this.requests.length;
    this.requests.push(structuredClone(request));
    const reply = await this.script(request, call);
    if (!isTurn(reply)) {
      yield* reply;
      return;
    }
    const delay = reply.delayMs ?? 0;
    for (const part of turnToParts(reply)) {
      if (delay > 0) await sleep(delay, undefined, { signal });
      signal.throwIfAborted();
      yield part;
    }
  }
}
