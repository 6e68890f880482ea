/**
 * What the guarantee scenarios send and what the model answers, shared by the test process, the `dev` process's tools
 * module (`dev-tools.ts`) and the wire model it talks to (`wire-model.ts`): every process computes the same bytes.
 */
import { createHash } from 'node:crypto';
import type { ToolResultContent } from '../../src/core/types';

/** A line of two-, three- and four-byte characters (𝄞 and 🚀 are surrogate pairs in JS). */
const LINE = (i: number) => `${String(i).padStart(7, '0')} ünïcødé ✓ 𝄞 🚀 the quick brown fox\n`;

/** Deterministic base64 "image" data of about `bytes` characters. */
function imageData(bytes: number): string {
  const out: Buffer[] = [];
  let n = 0;
  for (let i = 0; n < (bytes * 3) / 4; i++) {
    const b = createHash('sha256').update(String(i)).digest();
    out.push(b);
    n += b.length;
  }
  return `iVBORw0KGgo${Buffer.concat(out).toString('base64')}`.slice(0, Math.max(16, bytes - (bytes % 4)));
}

function lines(bytes: number): string {
  const out: string[] = [];
  for (let i = 0, n = 0; n < bytes; i++) {
    out.push(LINE(i));
    n += Buffer.byteLength(out[i]!);
  }
  return out.join('');
}

/** Serialized size as the staging threshold measures it (JSON of the content). */
export const contentBytes = (content: readonly ToolResultContent[]) => Buffer.byteLength(JSON.stringify(content));

/**
 * A tool result's content of exactly `bytes` bytes serialized: one text block for tiny sizes; else unicode text, an
 * image block and more text, the last block padded with ASCII to the byte.
 */
export function toolContent(bytes: number): ToolResultContent[] {
  const tiny: ToolResultContent[] = [{ type: 'text', text: 'x' }];
  if (bytes <= 1024) return bytes === 1 ? tiny : [{ type: 'text', text: 'x'.repeat(Math.max(1, bytes - 26)) }];
  const content: ToolResultContent[] = [
    { type: 'text', text: lines(Math.floor(bytes * 0.45)) },
    { type: 'image', data: imageData(Math.floor(bytes * 0.2)), mediaType: 'image/png' },
    { type: 'text', text: `tail ✓ 🚀\n${lines(Math.floor(bytes * 0.2))}` },
  ];
  const short = bytes - contentBytes(content);
  if (short < 0) throw new Error(`content for ${bytes} bytes overshoots by ${-short}`);
  const last = content[2] as { type: 'text'; text: string };
  last.text += '.'.repeat(short);
  return content;
}

/** A text of exactly `bytes` UTF-8 bytes (an event's or report's body). */
export function bodyText(bytes: number): string {
  const s = lines(bytes);
  // Lines are at most 60 bytes: cut by bytes, then drop the partial character the cut may have left.
  let cut = Buffer.from(s)
    .subarray(0, bytes)
    .toString('utf8')
    .replace(/\ufffd+$/, '');
  while (Buffer.byteLength(cut) > bytes) cut = cut.slice(0, -1);
  // A cut surrogate pair would not be valid UTF-16: end on whole characters, pad with ASCII.
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return cut + '.'.repeat(bytes - Buffer.byteLength(cut));
}

/** The user text that makes the model call `tool` with `args`. */
export const callText = (tool: string, args: Record<string, unknown>) => `call ${tool} ${JSON.stringify(args)}`;

/** How the scripted model answers, from the conversation so far (the same rule in-process and over the wire). */
export type ScriptStep =
  { kind: 'call'; name: string; args: Record<string, unknown> } | { kind: 'text'; text: string; slow: boolean };

export function scriptStep(firstUser: string, last: { role: string; text?: string; name?: string }): ScriptStep {
  const slow = firstUser.includes(SLOW_MARK);
  if (last.role === 'user') {
    const m = /^call (\S+) (\{.*\})$/.exec(last.text ?? '');
    if (m) return { kind: 'call', name: m[1]!, args: JSON.parse(m[2]!) as Record<string, unknown> };
    return { kind: 'text', text: `read ${Buffer.byteLength(last.text ?? '')} bytes`, slow };
  }
  // A spawned child's first request ends with its seed (`spawn_thread`'s result in the child, which quotes the
  // instructions): instructions that are a `callText` make the child call that tool.
  const seeded =
    last.role === 'tool_result' && /follow these instructions: call (\S+) (\{.*\})\n\./.exec(last.text ?? '');
  if (seeded) return { kind: 'call', name: seeded[1]!, args: JSON.parse(seeded[2]!) as Record<string, unknown> };
  return { kind: 'text', text: `answered ${last.role}${last.name ? ` ${last.name}` : ''}`, slow };
}

/** In the first user text: every answer of the thread streams slowly (the `adopted` slice path). */
export const SLOW_MARK = 'SLOWLY';

/** A slow turn: 8 chunks 60 ms apart, past a local slice budget of 50 ms. */
export const SLOW = { chunks: 8, delayMs: 60 } as const;
