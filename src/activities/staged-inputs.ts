/**
 * The slice's half of staged inputs (`core/staged.ts`): it loads each referenced blob, checks its size and SHA-256,
 * and puts the original content back before the commit, so history (and the model) get exactly what was sent.
 */
import { type StagedContent, textPreview } from '../core/staged';
import type { DisplaySegment, HistoryItem, StagedRef, StoredItem, ToolResultContent } from '../core/types';
import type { ConversationStore } from '../store/conversation-store';
import { sha256Hex } from '../store/staged-blobs';

export interface ResolvedInputs {
  items: StoredItem[];
  /** Staged blobs whose content `items` now hold: the commit removes them. */
  consumed: string[];
  /** Why some could not be loaded; those inputs commit their preview with the reason, so the thread goes on. */
  unavailable: string[];
}

/** What the model reads instead of a staged input that cannot be had (lost or altered in the store). */
const unavailableText = (reason: string, preview: string) =>
  `Error: ${reason}, so only the start of this input arrived:\n\n${preview}`;

/** A staged tool result's blob, or undefined when the blob is something else (a staged user text, say). */
function decodeContent(data: Buffer): StagedContent | undefined {
  try {
    const v = JSON.parse(data.toString('utf8')) as StagedContent;
    return Array.isArray(v?.content) ? v : undefined;
  } catch {
    return undefined;
  }
}

export async function resolveStaged(store: ConversationStore, items: readonly StoredItem[]): Promise<ResolvedInputs> {
  const out: ResolvedInputs = { items: [], consumed: [], unavailable: [] };

  /** The verified and decoded content of a reference, or why there is none. */
  const load = async <T>(
    ref: StagedRef,
    decode: (data: Buffer) => T | undefined,
  ): Promise<{ value: T } | { reason: string }> => {
    const data = await store.loadStaged(ref);
    const buffer = data && Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let value: T | undefined;
    let reason: string | undefined;
    if (!buffer) reason = `the staged input ${ref.id} (${ref.bytes} bytes) is not in the conversation store`;
    else if (buffer.byteLength !== ref.bytes || sha256Hex(buffer) !== ref.sha256) {
      reason = `the staged input ${ref.id} does not match its reference (${buffer.byteLength} bytes, expected ${ref.bytes})`;
    } else if ((value = decode(buffer)) === undefined) reason = `the staged input ${ref.id} is not a tool result`;
    if (reason !== undefined) {
      out.unavailable.push(reason);
      return { reason };
    }
    out.consumed.push(ref.id);
    return { value: value as T };
  };

  const blocks = async (content: ToolResultContent[]): Promise<StagedContent> => {
    if (!content.some((b) => b.type === 'text' && b.staged)) return { content };
    const resolved: ToolResultContent[] = [];
    let displayAs: DisplaySegment[] | undefined;
    for (const b of content) {
      if (b.type !== 'text' || !b.staged) {
        resolved.push(b);
        continue;
      }
      const got = await load(b.staged, decodeContent);
      if ('reason' in got) {
        resolved.push({ type: 'text', text: unavailableText(got.reason, b.text) });
        continue;
      }
      resolved.push(...got.value.content);
      if (got.value.displayAs) displayAs = got.value.displayAs;
    }
    return { content: resolved, ...(displayAs && { displayAs }) };
  };

  for (const stored of items) {
    const item = stored.item;
    let next: HistoryItem = item;
    if (item.kind === 'user' && item.staged) {
      const { staged: ref, ...rest } = item;
      const got = await load(ref, (data) => data.toString('utf8'));
      if ('reason' in got) {
        next = { ...rest, text: `${rest.text}\n\n[${got.reason}]` };
      } else {
        // The workflow may have prefixed the preview (`<interrupt>`): keep what it added, then the whole text.
        const preview = textPreview(got.value);
        next = {
          ...rest,
          text: (rest.text.endsWith(preview) ? rest.text.slice(0, rest.text.length - preview.length) : '') + got.value,
        };
      }
    } else if (item.kind === 'tool_result') {
      const { content, displayAs } = await blocks(item.content);
      if (content !== item.content) next = { ...item, content, ...(displayAs && { displayAs }) };
    } else if (item.kind === 'subscription_event') {
      const { content } = await blocks(item.result.content);
      if (content !== item.result.content) next = { ...item, result: { ...item.result, content } };
    }
    out.items.push(next === item ? stored : { ...stored, item: next });
  }
  return out;
}
