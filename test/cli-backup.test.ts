/**
 * `backup <dest>` with real CLI processes on a real SQLite store: it writes through a temporary file of its own and
 * leaves every other file alone (an unrelated `<dest>.partial` included), and a destination directory that does not
 * exist is a usage error that names it.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, inject, it } from 'vitest';
import { SqliteConversationStore } from '../src/store/sqlite';
import { cliRunner } from './cli-process';

const dir = join(inject('scratchDir'), `backup-${randomUUID().slice(0, 8)}`);
const storeFile = join(dir, 'conversations.sqlite');
const { run } = cliRunner(() => ['--store', storeFile], {});

beforeAll(async () => {
  mkdirSync(dir);
  const store = new SqliteConversationStore(storeFile);
  await store.ensureThread({ threadId: 'kept', kind: 'root' });
  await store.close();
});

it('leaves an unrelated <dest>.partial alone and writes a complete copy', async () => {
  const dest = join(dir, 'copy.sqlite');
  const theirs = `${dest}.partial`;
  writeFileSync(theirs, 'someone else’s half-written file');
  const r = await run('backup', dest);
  expect(r.code, r.stderr).toBe(0);
  expect(readFileSync(theirs, 'utf8')).toBe('someone else’s half-written file');
  // Its own temporary file is gone (looked at before the copy is opened, which adds its -wal and -shm): only the store, the copy and the unrelated file remain.
  expect(
    readdirSync(dir)
      .filter((f) => f.startsWith('copy.sqlite'))
      .sort(),
  ).toEqual(['copy.sqlite', 'copy.sqlite.partial']);
  const copy = new SqliteConversationStore(dest, { readonly: true });
  try {
    expect(await copy.getThread('kept')).toMatchObject({ threadId: 'kept', kind: 'root' });
  } finally {
    await copy.close();
  }
});

it('refuses a destination that exists, and keeps it', async () => {
  const dest = join(dir, 'existing.sqlite');
  writeFileSync(dest, 'not a backup');
  const r = await run('backup', dest);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`${dest} exists`);
  expect(readFileSync(dest, 'utf8')).toBe('not a backup');
});

it('names a destination directory that does not exist, as a usage error', async () => {
  const missing = join(dir, `no-such-dir-${randomUUID().slice(0, 8)}`);
  const r = await run('backup', join(missing, 'copy.sqlite'));
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(missing);
  expect(r.stderr).toContain('does not exist');
});
