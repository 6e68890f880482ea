/** The throwaway PostgreSQL the tests and the benchmark start: its temp data goes with it; a named data dir stays. */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startLocalPostgres } from '../infra/postgres';

it('removes the temp dir it made at stop, and leaves a data dir the caller named', async () => {
  const throwaway = await startLocalPostgres();
  expect(existsSync(join(throwaway.dataDir, 'PG_VERSION'))).toBe(true);
  await throwaway.stop();
  expect(existsSync(join(throwaway.dataDir, '..'))).toBe(false);

  const named = join(mkdtempSync(join(tmpdir(), 'named-pg-')), 'data');
  const kept = await startLocalPostgres({ dataDir: named });
  await kept.stop();
  expect(existsSync(join(named, 'PG_VERSION'))).toBe(true);
}, 60_000);
