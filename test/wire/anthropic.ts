/** Anthropic Messages API, streaming (`POST /v1/messages`, server-sent events). */
import { sse, type WireDialect, type WireTurn } from './server';

function frames(turn: WireTurn): string[] {
  const out: string[] = [];
  const usage = turn.usage ?? { input: 10, output: 5 };
  out.push(
    sse(
      {
        type: 'message_start',
        message: {
          id: 'msg_01',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage.input, output_tokens: 1 },
        },
      },
      'message_start',
    ),
  );
  let index = 0;
  const block = (start: unknown, deltas: unknown[]) => {
    out.push(sse({ type: 'content_block_start', index, content_block: start }, 'content_block_start'));
    for (const delta of deltas) out.push(sse({ type: 'content_block_delta', index, delta }, 'content_block_delta'));
    out.push(sse({ type: 'content_block_stop', index }, 'content_block_stop'));
    index++;
  };
  if (turn.reasoning) {
    block({ type: 'thinking', thinking: '', signature: '' }, [
      { type: 'thinking_delta', thinking: turn.reasoning.text },
      { type: 'signature_delta', signature: turn.reasoning.signature },
    ]);
  }
  if (turn.text)
    block(
      { type: 'text', text: '' },
      turn.text.map((text) => ({ type: 'text_delta', text })),
    );
  if (turn.toolCall) {
    block(
      { type: 'tool_use', id: turn.toolCall.id, name: turn.toolCall.name, input: {} },
      turn.toolCall.argChunks.map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    );
  }
  out.push(
    sse(
      {
        type: 'message_delta',
        delta: { stop_reason: turn.toolCall ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      },
      'message_delta',
    ),
  );
  out.push(sse({ type: 'message_stop' }, 'message_stop'));
  return out;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export const anthropicDialect: WireDialect = {
  name: 'anthropic',
  matches: (path) => path === '/v1/messages',
  contentType: 'text/event-stream',
  frames,
  error: (status, message) => ({
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } }),
  }),
};
