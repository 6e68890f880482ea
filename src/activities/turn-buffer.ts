/**
 * The streaming, uncommitted assistant turn (docs/semantics.md §17). Entries move to the slice's flushed items at a
 * flush point, or are discarded when an attempt fails, so a partial turn is never committed by a retry.
 */
import { messageIds } from '../core/ids';
import type { HistoryItem, StoredItem } from '../core/types';

export class TurnBuffer {
  private entries: StoredItem[] = [];
  private counter = 0;
  /** Items flushed during this slice, in order; committed at the end of the slice. */
  readonly flushed: StoredItem[] = [];

  constructor(private readonly sliceId: string) {}

  private nextId(): string {
    return messageIds.completion(this.sliceId, this.counter++);
  }

  /** Appends streamed text, merging into the previous entry when it is text too (one item per text run). */
  appendText(text: string): void {
    const last = this.entries[this.entries.length - 1];
    if (last?.item.kind === 'assistant') last.item.text += text;
    else this.entries.push({ messageId: this.nextId(), item: { kind: 'assistant', text } });
  }

  push(item: HistoryItem): void {
    this.entries.push({ messageId: this.nextId(), item });
  }

  /** Appends an item produced by the runtime itself (a tool result) straight to the flushed items. */
  pushFlushed(messageId: string, item: HistoryItem): void {
    this.flushed.push({ messageId, item });
  }

  flush(): void {
    this.flushed.push(...this.entries);
    this.entries = [];
  }

  discard(): void {
    this.entries = [];
  }

  /**
   * Flush after a cancellation or a final error: trailing reasoning and whitespace-only text are dropped so that
   * committed history never ends on reasoning before the next user turn.
   */
  flushTrimmed(): void {
    while (this.entries.length > 0) {
      const last = this.entries[this.entries.length - 1]!.item;
      if (last.kind === 'reasoning' || (last.kind === 'assistant' && last.text.trim() === '')) this.entries.pop();
      else break;
    }
    this.flush();
  }

  get isEmpty(): boolean {
    return this.entries.length === 0;
  }
}
