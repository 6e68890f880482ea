/** A run's scratch folder goes when the run ends, and a killed run's folder goes with the next run. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { runScratch } from '../../infra/scratch';

const prefix = `scratch-test-${process.pid}-`;
afterEach(() => delete process.env.INFINITY_KEEP_SCRATCH);

it('makes a folder owned by this process and removes it, once, at remove()', () => {
  const scratch = runScratch(prefix);
  expect(readFileSync(join(scratch.dir, 'owner.pid'), 'utf8')).toBe(String(process.pid));
  writeFileSync(join(scratch.dir, 'data'), 'x');
  scratch.remove();
  expect(existsSync(scratch.dir)).toBe(false);
  expect(() => scratch.remove()).not.toThrow();
});

it('sweeps folders of its prefix whose owner is gone, and only those', () => {
  const dead = spawnSync(process.execPath, ['-e', '0']).pid!; // a process that has exited
  const orphan = join(tmpdir(), `${prefix}orphan`);
  const living = join(tmpdir(), `${prefix}living`);
  const unowned = join(tmpdir(), `${prefix}unowned`);
  for (const d of [orphan, living, unowned]) mkdirSync(d, { recursive: true });
  writeFileSync(join(orphan, 'owner.pid'), String(dead));
  writeFileSync(join(living, 'owner.pid'), String(process.pid));
  const scratch = runScratch(prefix);
  try {
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(living)).toBe(true);
    expect(existsSync(unowned)).toBe(true);
  } finally {
    scratch.remove();
    for (const d of [living, unowned]) spawnSync('rm', ['-rf', d]);
  }
});

it('keeps the folder with INFINITY_KEEP_SCRATCH=1, from the next run too', () => {
  process.env.INFINITY_KEEP_SCRATCH = '1';
  const scratch = runScratch(prefix);
  scratch.remove();
  expect(existsSync(scratch.dir)).toBe(true);
  // Ownerless, so the next run's sweep keeps it too.
  runScratch(prefix).remove();
  expect(existsSync(scratch.dir)).toBe(true);
  spawnSync('rm', ['-rf', scratch.dir]);
});
