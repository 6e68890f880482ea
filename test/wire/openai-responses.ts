/** OpenAI Responses API, streaming (`POST /v1/responses`, typed server-sent events). */
import { openAiError } from './openai-chat';
import { sse, type WireDialect, type WireTurn } from './server';

function frames(turn: WireTurn): string[] {
  const usage = turn.usage ?? { input: 10, output: 5 };
  const response = (status: string, output: unknown[], u: unknown) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1_700_000_000,
    model: 'gpt-test',
    status,
    output,
    incomplete_details: null,
    usage: u,
  });
  let seq = 0;
  const ev = (type: string, body: Record<string, unknown>) => sse({ type, sequence_number: seq++, ...body }, type);
  const out = [ev('response.created', { response: response('in_progress', [], null) })];
  const done: unknown[] = [];
  let outputIndex = 0;
  if (turn.reasoning) {
    const item = {
      type: 'reasoning',
      id: 'rs_1',
      summary: [] as unknown[],
      encrypted_content: turn.reasoning.signature,
    };
    out.push(ev('response.output_item.added', { output_index: outputIndex, item }));
    out.push(
      ev('response.reasoning_summary_part.added', {
        item_id: 'rs_1',
        output_index: outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      }),
    );
    out.push(
      ev('response.reasoning_summary_text.delta', {
        item_id: 'rs_1',
        output_index: outputIndex,
        summary_index: 0,
        delta: turn.reasoning.text,
      }),
    );
    out.push(
      ev('response.reasoning_summary_part.done', {
        item_id: 'rs_1',
        output_index: outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text: turn.reasoning.text },
      }),
    );
    const finished = { ...item, summary: [{ type: 'summary_text', text: turn.reasoning.text }] };
    out.push(ev('response.output_item.done', { output_index: outputIndex, item: finished }));
    done.push(finished);
    outputIndex++;
  }
  if (turn.text) {
    const text = turn.text.join('');
    out.push(
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { type: 'message', id: 'msg_1', role: 'assistant', status: 'in_progress', content: [] },
      }),
    );
    out.push(
      ev('response.content_part.added', {
        item_id: 'msg_1',
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      }),
    );
    for (const delta of turn.text)
      out.push(
        ev('response.output_text.delta', {
          item_id: 'msg_1',
          output_index: outputIndex,
          content_index: 0,
          delta,
          logprobs: [],
        }),
      );
    out.push(
      ev('response.output_text.done', {
        item_id: 'msg_1',
        output_index: outputIndex,
        content_index: 0,
        text,
        logprobs: [],
      }),
    );
    const finished = {
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text, annotations: [] }],
    };
    out.push(ev('response.output_item.done', { output_index: outputIndex, item: finished }));
    done.push(finished);
    outputIndex++;
  }
  if (turn.toolCall) {
    const { id, name, argChunks } = turn.toolCall;
    const args = argChunks.join('');
    out.push(
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { type: 'function_call', id: 'fc_1', call_id: id, name, arguments: '', status: 'in_progress' },
      }),
    );
    for (const delta of argChunks)
      out.push(ev('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: outputIndex, delta }));
    out.push(
      ev('response.function_call_arguments.done', { item_id: 'fc_1', output_index: outputIndex, arguments: args }),
    );
    const finished = { type: 'function_call', id: 'fc_1', call_id: id, name, arguments: args, status: 'completed' };
    out.push(ev('response.output_item.done', { output_index: outputIndex, item: finished }));
    done.push(finished);
  }
  const u = {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output,
  };
  out.push(ev('response.completed', { response: response('completed', done, u) }));
  return out;
}

export const openAiResponsesDialect: WireDialect = {
  name: 'openai-responses',
  matches: (path) => path === '/v1/responses',
  contentType: 'text/event-stream',
  frames,
  error: openAiError,
};
