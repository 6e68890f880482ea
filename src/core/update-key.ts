/** A short key of a Temporal update id, for what a thread's run hands to the next (decision 69). */

/**
 * A short, fixed-length key of an update id (32-bit FNV-1a, 8 hex digits): update ids are the senders' (up to the
 * server's 1,000 characters), and what a run hands over must stay small whatever they chose. Should two updates of one
 * input have the same key (one chance in 4 billion), the second is answered as the first was, not as a duplicate: its
 * input was delivered either way.
 */
export function updateKey(id: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
