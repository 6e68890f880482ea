/**
 * What holds conversations is private to its owner (security item 15), whatever the umask: the data directory
 * `startLocalSystem` (and so `infinity-temporal dev`) creates is 0700, and the SQLite store, its -wal and -shm, a
 * backup of it and the dev server's own database (with its -wal and -shm) are 0600. Real files, a real dev server.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startLocalSystem } from '../src/local-system';
import { ScriptedModel } from '../src/model/scripted';
import { SqliteConversationStore } from '../src/store/sqlite';

const mode = (path: string) => statSync(path).mode & 0o777;
const modes = (paths: string[]) => Object.fromEntries(paths.map((p) => [p, mode(p).toString(8)]));

// The usual umask, set here so the result does not depend on the shell's: it lets group and others read what is made.
let umask: number;
beforeAll(() => {
  umask = process.umask(0o022);
});
afterAll(() => {
  process.umask(umask);
});

it('a SQLite store, its -wal and -shm, and its backup are 0600', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'modes-'));
  const file = join(dir, 'conversations.sqlite');
  const store = new SqliteConversationStore(file);
  try {
    await store.ensureThread({ threadId: 't', kind: 'root' });
    const backup = join(dir, 'backup.sqlite');
    await store.backup(backup);
    const files = [file, `${file}-wal`, `${file}-shm`, backup];
    expect(modes(files)).toEqual(Object.fromEntries(files.map((f) => [f, '600'])));
  } finally {
    await store.close();
  }
});

it("startLocalSystem's data directory is 0700, and its store and the dev server's database are 0600", async () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'modes-')), 'data', 'local');
  const sys = await startLocalSystem({
    dataDir,
    model: new ScriptedModel(() => ({ text: 'ok' })),
    devServer: { ui: false },
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  try {
    const thread = await sys.client.startThread({ threadId: 'private' });
    await thread.sendUserText('hello');
    await thread.waitForIdle();
    expect(mode(dataDir).toString(8)).toBe('700');
    expect(mode(join(dataDir, '..')).toString(8)).toBe('700'); // created by it too
    const files = ['conversations.sqlite', 'temporal.sqlite'].flatMap((f) =>
      ['', '-wal', '-shm'].map((s) => join(dataDir, f + s)),
    );
    // All six exist while both databases are open in WAL mode.
    expect(modes(files)).toEqual(Object.fromEntries(files.map((f) => [f, '600'])));
  } finally {
    await sys.shutdown();
  }
});
