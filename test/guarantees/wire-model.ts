/**
 * The model of the `dev` cells: an OpenAI-compatible server on loopback (the `dev` process runs
 * `--model openai-compatible:…` against it) that answers by the scenarios' rule ({@link scriptStep}) and records every
 * request body as it arrived, so a cell can check what the model was shown in another process.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { openAiChatDialect } from '../wire/openai-chat';
import { SLOW, scriptStep } from './content';

export interface WireMessage {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

export interface WireModel {
  baseUrl: string;
  /** Each request's messages, as sent. */
  requests: WireMessage[][];
  /** Raw request bodies, as sent. */
  bodies: string[];
  /** When each request arrived (ms since the epoch). */
  times: number[];
  close(): Promise<void>;
}

/** The text of a wire message's content (a string, or text parts joined). */
export const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: { text?: string }) => p.text ?? '').join('')
      : '';

export async function startWireModel(): Promise<WireModel> {
  const requests: WireMessage[][] = [];
  const bodies: string[] = [];
  const times: number[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks).toString('utf8');
      bodies.push(raw);
      times.push(Date.now());
      const messages = (JSON.parse(raw) as { messages: WireMessage[] }).messages;
      requests.push(messages);
      const firstUser = textOf(messages.find((m) => m.role === 'user')?.content);
      const last = messages[messages.length - 1]!;
      const callName = (id?: string) =>
        messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === id)?.function.name;
      const step = scriptStep(
        firstUser,
        last.role === 'tool'
          ? { role: 'tool_result', name: callName(last.tool_call_id), text: textOf(last.content) }
          : // Consecutive user texts (one after a rewind's note) arrive merged as parts: the last one is the newest.
            {
              role: last.role,
              text: Array.isArray(last.content) ? textOf(last.content.slice(-1)) : textOf(last.content),
            },
      );
      const turn =
        step.kind === 'call'
          ? { toolCall: { id: `call_${randomUUID()}`, name: step.name, argChunks: [JSON.stringify(step.args)] } }
          : { text: step.slow ? chunked(step.text, SLOW.chunks) : [step.text] };
      res.writeHead(200, { 'content-type': openAiChatDialect.contentType });
      for (const frame of openAiChatDialect.frames(turn)) {
        if (step.kind === 'text' && step.slow) await sleep(SLOW.delayMs);
        res.write(frame);
      }
      res.end();
    })().catch((e: unknown) => {
      res.destroy(e instanceof Error ? e : new Error(String(e)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    bodies,
    times,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function chunked(text: string, n: number): string[] {
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
