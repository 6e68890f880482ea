/** OpenAI Chat Completions, streaming (`POST /v1/chat/completions`, server-sent events, `[DONE]`). */
import { sse, type WireDialect, type WireTurn } from './server';

function frames(turn: WireTurn): string[] {
  const usage = turn.usage ?? { input: 10, output: 5 };
  const chunk = (delta: unknown, finish_reason: string | null = null) =>
    sse({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'gpt-test',
      choices: [{ index: 0, delta, finish_reason }],
    });
  const out = [chunk({ role: 'assistant', content: '' })];
  for (const t of turn.text ?? []) out.push(chunk({ content: t }));
  if (turn.toolCall) {
    const { id, name, argChunks } = turn.toolCall;
    out.push(chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }] }));
    for (const a of argChunks) out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] }));
  }
  out.push(chunk({}, turn.toolCall ? 'tool_calls' : 'stop'));
  out.push(
    sse({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'gpt-test',
      choices: [],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    }),
  );
  out.push(sse('[DONE]'));
  return out;
}

export function openAiError(status: number, message: string) {
  return {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', param: null, code: null },
    }),
  };
}

export const openAiChatDialect: WireDialect = {
  name: 'openai-chat',
  matches: (path) => path === '/v1/chat/completions' || path === '/chat/completions',
  contentType: 'text/event-stream',
  frames,
  error: openAiError,
};
