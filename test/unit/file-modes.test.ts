/** `src/store/file-modes.ts`: private at creation whatever the umask; what exists already keeps its mode. */
import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPrivateFile, ensurePrivateDir } from '../../src/store/file-modes';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
let umask: number;
beforeAll(() => {
  umask = process.umask(0o022);
});
afterAll(() => {
  process.umask(umask);
});

it('creates every missing directory 0700 and leaves existing ones alone', () => {
  const base = mkdtempSync(join(tmpdir(), 'private-dir-'));
  chmodSync(base, 0o755);
  ensurePrivateDir(join(base, 'a', 'b', 'c'));
  expect([mode(base), mode(join(base, 'a')), mode(join(base, 'a', 'b')), mode(join(base, 'a', 'b', 'c'))]).toEqual([
    '755',
    '700',
    '700',
    '700',
  ]);
  mkdirSync(join(base, 'shared'), { mode: 0o755 });
  ensurePrivateDir(join(base, 'shared'));
  expect(mode(join(base, 'shared'))).toBe('755');
});

it('creates a file 0600 even under a umask that would take its write bit, and never takes over an existing one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'private-file-'));
  process.umask(0o277);
  try {
    expect(createPrivateFile(join(dir, 'new'))).toBe(true);
  } finally {
    process.umask(0o022);
  }
  expect(mode(join(dir, 'new'))).toBe('600');
  writeFileSync(join(dir, 'theirs'), 'content', { mode: 0o644 });
  expect(createPrivateFile(join(dir, 'theirs'))).toBe(false);
  expect(mode(join(dir, 'theirs'))).toBe('644');
  expect(statSync(join(dir, 'theirs')).size).toBe(7);
});
