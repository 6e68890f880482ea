/**
 * The retry table of a completion (docs/semantics.md §17) for timeouts: a request that never starts, a stream that
 * stalls, retries running out, and a cancellation while waiting. A scripted model, no network.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPLETION_POLICY, runCompletion } from '../../src/activities/completion';
import type { ThreadEvent } from '../../src/core/types';
import type { ModelStreamPart } from '../../src/model/provider';
import { ScriptedModel } from '../../src/model/scripted';

const policy = {
  ...DEFAULT_COMPLETION_POLICY,
  initiateTimeoutMs: 80,
  chunkTimeoutMs: 80,
  unexpectedEndWaitMs: 1,
  maxRetries: 3,
};

/** Parts, then silence until the request is aborted. */
async function* thenStall(parts: ModelStreamPart[], signal?: AbortSignal): AsyncIterable<ModelStreamPart> {
  yield* parts;
  await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
}

function run(model: ScriptedModel, signal = new AbortController().signal) {
  const events: ThreadEvent[] = [];
  const out = runCompletion({
    threadId: 't',
    sliceId: 's',
    system: '',
    history: [{ kind: 'user', text: 'hi' }],
    tools: new Map(),
    model,
    policy,
    signal,
    emit: (e) => events.push(e),
    toolContext: () => {
      throw new Error('unused');
    },
  });
  return { out, events };
}

const infos = (events: ThreadEvent[]) =>
  events.filter((e) => e.type === 'info').map((e) => (e as { text: string }).text);
const finish: ModelStreamPart = { type: 'finish', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } };

describe('completion timeouts', () => {
  it('retries a request that does not start in time', async () => {
    const model = new ScriptedModel((_req, call) =>
      call === 0 ? thenStall([]) : [{ type: 'text-delta', text: 'late but fine' }, finish],
    );
    const { out, events } = run(model);
    const result = await out;
    expect(result.buffer.flushed.map((s) => s.item)).toEqual([{ kind: 'assistant', text: 'late but fine' }]);
    expect(infos(events)).toEqual(['Stream error (timeout initiating request), retrying...']);
  });

  it('discards a stalled stream and commits only the retried turn', async () => {
    const model = new ScriptedModel((_req, call) =>
      call === 0
        ? thenStall([{ type: 'text-delta', text: 'half a tho' }])
        : [{ type: 'text-delta', text: 'whole thought' }, finish],
    );
    const { out, events } = run(model);
    const result = await out;
    expect(result.buffer.flushed.map((s) => s.item)).toEqual([{ kind: 'assistant', text: 'whole thought' }]);
    expect(infos(events)).toEqual(['Stream error (timeout), retrying...']);
  });

  it('gives up after the retries with the reference error', async () => {
    const model = new ScriptedModel(() => thenStall([]));
    const { out, events } = run(model);
    const result = await out;
    expect(result.error).toBe('Timed out initiating request');
    expect(model.requests).toHaveLength(policy.maxRetries + 1);
    expect(infos(events).at(-1)).toBe('Error: Timed out initiating request');
  });

  it('ends quietly when cancelled while waiting for the model', async () => {
    const abort = new AbortController();
    const model = new ScriptedModel(() => thenStall([{ type: 'text-delta', text: 'partial' }]));
    const { out } = run(model, abort.signal);
    setTimeout(() => abort.abort(), 30);
    const result = await out;
    expect(result.interrupted).toBe(true);
    expect(result.error).toBeUndefined();
    // The visible partial text is kept (flush-trimming), as for any interruption.
    expect(result.buffer.flushed.map((s) => s.item)).toEqual([{ kind: 'assistant', text: 'partial' }]);
  });
});
