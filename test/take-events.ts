/** Reading a live event stream in tests. */
import type { LiveEvent } from '../src/events/live-events';

/** The next `n` events (fewer if the stream ends), leaving the stream open. */
export async function take(it: AsyncGenerator<LiveEvent>, n: number): Promise<LiveEvent[]> {
  const got: LiveEvent[] = [];
  while (got.length < n) {
    const next = await it.next();
    if (next.done) break;
    got.push(next.value);
  }
  return got;
}
