/** The update key a run hands to the next in place of a sender's update id (decision 69). */
import { expect, it } from 'vitest';
import { updateKey } from '../../src/core/update-key';

it('is 32-bit FNV-1a in 8 hex digits, the same in every run that computes it', () => {
  // FNV-1a's published test vectors.
  expect(updateKey('')).toBe('811c9dc5');
  expect(updateKey('a')).toBe('e40c292c');
  expect(updateKey('foobar')).toBe('bf9cf968');
  expect(updateKey('u'.repeat(1000))).toMatch(/^[0-9a-f]{8}$/);
});

it('tells apart the update ids a client makes', () => {
  const ids = Array.from({ length: 20_000 }, (_, i) => crypto.randomUUID() + String(i));
  expect(new Set(ids.map(updateKey)).size).toBeGreaterThan(19_990);
});
