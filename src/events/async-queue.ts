/**
 * A queue that callbacks push into and one consumer iterates: how event listeners (a hub, an EventSource, several
 * streams) become async iterators. `fail` ends the iteration with an error, `close` quietly, both after what was
 * already pushed.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private end: { error: unknown } | 'closed' | undefined;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  fail(error: unknown): void {
    this.end ??= { error };
    this.wake?.();
  }

  close(): void {
    this.end ??= 'closed';
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      while (this.items.length > 0) yield this.items.shift()!;
      if (this.end === 'closed') return;
      if (this.end) throw this.end.error;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
