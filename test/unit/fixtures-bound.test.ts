/**
 * The fixtures stay bounded release after release (issue 39 §2, decision 85): the replay gate holds the recorded sets of
 * the supported window only (three releases), and the frozen bundles are the window's, the bridge's and a few older
 * releases' that the migration tests park threads on. A release that records its set deletes the one that left the
 * window; this test fails until it does.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const FIXTURES = join(__dirname, '..', 'fixtures');
const releases = (dir: string) => readdirSync(join(FIXTURES, dir)).filter((d) => /^v\d+\.\d+$/.test(d));

function bytes(path: string): number {
  const s = statSync(path);
  return s.isDirectory() ? readdirSync(path).reduce((n, f) => n + bytes(join(path, f)), 0) : s.size;
}

/** Window (3) and bridge (1) bundles, and at most three older releases' for the migration tests. */
const MAX_BUNDLES = 7;
/** Three sets of ~3 MB, seven bundles of ~2.3 MB, the rest of the fixtures (~0.5 MB), with room to grow. */
const MAX_FIXTURE_BYTES = 32 * 1024 * 1024;

it('the replay gate holds at most the three recorded sets of the supported window', () => {
  expect(releases('histories').length).toBeLessThanOrEqual(3);
});

it(`at most ${MAX_BUNDLES} frozen bundles, and test/fixtures within ${MAX_FIXTURE_BYTES / 2 ** 20} MiB`, () => {
  expect(releases('bundles').length).toBeLessThanOrEqual(MAX_BUNDLES);
  expect(bytes(FIXTURES)).toBeLessThanOrEqual(MAX_FIXTURE_BYTES);
});
