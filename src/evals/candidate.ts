/**
 * One completion of the candidate model for a rebuilt request: its text, its first tool call (as the slice keeps only
 * the first of a round), usage and latency. No tool runs and nothing is committed: evals only look.
 */
import type { TokenUsage } from '../core/types';
import type { ModelProvider, ModelRequest } from '../model/provider';
import type { ToolChoice } from './recorded';

export interface CandidateTurn {
  text: string;
  toolCall?: ToolChoice & { id: string };
  usage?: TokenUsage;
  /** From the request to the stream's end, ms. */
  latencyMs: number;
  /** The stream failed or ended without a `finish` part: what was received is kept. */
  error?: string;
}

/** The arguments as the model wrote them: parsed JSON, or the raw text when it is not JSON (a divergence then). */
function parseArgs(input: string): unknown {
  try {
    return JSON.parse(input === '' ? '{}' : input);
  } catch {
    return input;
  }
}

/** Streams one completion of `model` for `request` (no retries: a failed call is a result, reported as such). */
export async function runCandidate(
  model: ModelProvider,
  request: ModelRequest,
  signal?: AbortSignal,
): Promise<CandidateTurn> {
  const started = performance.now();
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const turn: CandidateTurn = { text: '', latencyMs: 0 };
  let finished = false;
  try {
    for await (const part of model.stream(request, controller.signal)) {
      if (part.type === 'finish') {
        if (part.usage) turn.usage = part.usage;
        finished = true;
        break;
      }
      if (turn.toolCall) continue; // only the first tool call of a round counts, as in the slice
      if (part.type === 'text-delta') turn.text += part.text;
      else if (part.type === 'tool-call') turn.toolCall = { id: part.id, name: part.name, args: parseArgs(part.input) };
    }
    if (!finished) turn.error = 'the stream ended without a finish part';
  } catch (e) {
    turn.error = e instanceof Error ? e.message : String(e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    controller.abort();
  }
  turn.latencyMs = performance.now() - started;
  return turn;
}
