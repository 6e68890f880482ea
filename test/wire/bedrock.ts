/**
 * Amazon Bedrock Converse, streaming (`POST /model/{id}/converse-stream`): binary AWS event-stream frames, encoded
 * with the same Smithy codec the AWS SDKs use.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { WireDialect, WireTurn } from './server';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function event(type: string, body: unknown): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify(body)),
  });
}

function frames(turn: WireTurn): Uint8Array[] {
  const usage = turn.usage ?? { input: 10, output: 5 };
  const out = [event('messageStart', { role: 'assistant' })];
  let index = 0;
  if (turn.reasoning) {
    out.push(
      event('contentBlockDelta', {
        contentBlockIndex: index,
        delta: { reasoningContent: { text: turn.reasoning.text } },
      }),
    );
    out.push(
      event('contentBlockDelta', {
        contentBlockIndex: index,
        delta: { reasoningContent: { signature: turn.reasoning.signature } },
      }),
    );
    out.push(event('contentBlockStop', { contentBlockIndex: index }));
    index++;
  }
  if (turn.text) {
    for (const text of turn.text) out.push(event('contentBlockDelta', { contentBlockIndex: index, delta: { text } }));
    out.push(event('contentBlockStop', { contentBlockIndex: index }));
    index++;
  }
  if (turn.toolCall) {
    const { id, name, argChunks } = turn.toolCall;
    out.push(event('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: id, name } } }));
    for (const input of argChunks)
      out.push(event('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input } } }));
    out.push(event('contentBlockStop', { contentBlockIndex: index }));
  }
  out.push(event('messageStop', { stopReason: turn.toolCall ? 'tool_use' : 'end_turn' }));
  out.push(
    event('metadata', {
      usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output },
      metrics: { latencyMs: 5 },
    }),
  );
  return out;
}

const ERROR_TYPES: Record<number, string> = {
  429: 'ThrottlingException',
  400: 'ValidationException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

export const bedrockDialect: WireDialect = {
  name: 'bedrock',
  matches: (path) => /^\/model\/[^/]+\/converse-stream$/.test(path),
  contentType: 'application/vnd.amazon.eventstream',
  frames,
  error: (status, message) => ({
    headers: {
      'content-type': 'application/json',
      'x-amzn-errortype': ERROR_TYPES[status] ?? 'InternalServerException',
    },
    body: JSON.stringify({ message }),
  }),
};
