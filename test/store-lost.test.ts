/**
 * A conversation store file removed or replaced under a running worker: SQLite would go on committing into the
 * unlinked file, and the loss would surface only after a restart. Here the next slice fails with a typed error that
 * names the file, nothing is reported committed that is not, and the README's restore procedure brings the thread
 * back (or shows the commit conflict when the backup is older than the thread).
 */
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, inject, it } from 'vitest';
import { StoreFileLostError } from '../src/index';
import { SqliteConversationStore } from '../src/store/sqlite';
import { cliRunner } from './cli-process';
import { eventually, lostStoreSetup, render, type TestSystem, uid } from './helpers';
import { result, user } from './store-contract';

const scratch = () => join(inject('scratchDir'), `lost-${randomUUID()}.sqlite`);
const commitText = (s: SqliteConversationStore, n: number) =>
  s.commit({
    threadId: 't',
    sliceId: `s${n}`,
    expectedLength: n,
    items: [user(`m${n}`, `text ${n}`)],
    result: result(`s${n}`, n + 1),
  });

describe('SqliteConversationStore with a lost file', () => {
  it('refuses commits once its file is removed, names it, and can still back up what it held', async () => {
    const file = scratch();
    const s = new SqliteConversationStore(file);
    expect(await commitText(s, 0)).toBe('committed');
    rmSync(file);
    const err = await commitText(s, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreFileLostError);
    expect(err).toMatchObject({ database: file, path: file, role: 'database', change: 'removed', nonRetryable: true });
    expect((err as Error).message).toContain(`conversation store ${file} was removed`);
    expect((err as Error).message).toContain('Backup and restore');
    // The dead connection wrote nothing: the refused commit is not in the orphaned file either.
    expect(await s.length('t')).toBe(1);
    await expect(s.findSlice('t', 's0')).rejects.toBeInstanceOf(StoreFileLostError);
    await expect(s.ensureThread({ threadId: 'new', kind: 'root' })).rejects.toBeInstanceOf(StoreFileLostError);
    await expect(s.markClosed('t')).rejects.toBeInstanceOf(StoreFileLostError);
    // The rescue: this connection still reads the unlinked file, and a backup copies it out.
    const rescued = `${file}.rescued`;
    await s.backup(rescued);
    await s.close();
    const r = new SqliteConversationStore(rescued);
    expect((await r.load('t')).map((x) => x.item)).toEqual([{ kind: 'user', text: 'text 0' }]);
    expect(await commitText(r, 1)).toBe('committed');
    await r.close();
  });

  it('refuses commits once another SQLite file is renamed over its file', async () => {
    const file = scratch();
    const s = new SqliteConversationStore(file);
    await commitText(s, 0);
    const older = `${file}.older`;
    await s.backup(older);
    await commitText(s, 1);
    renameSync(older, file);
    await expect(commitText(s, 2)).rejects.toMatchObject({
      name: 'StoreFileLostError',
      change: 'replaced',
      role: 'database',
    });
    await expect(commitText(s, 2)).rejects.toThrow(`conversation store ${file} was replaced by another file`);
    await s.close();
  });

  it('refuses commits once its write-ahead log is removed; closing cleanly keeps what the log held', async () => {
    const file = scratch();
    const s = new SqliteConversationStore(file);
    await commitText(s, 0);
    rmSync(`${file}-wal`);
    await expect(commitText(s, 1)).rejects.toMatchObject({
      role: 'write-ahead log',
      change: 'removed',
      path: `${file}-wal`,
    });
    await s.close();
    // What the message promises: the commit that lived only in the unlinked log reached the database on close.
    const again = new SqliteConversationStore(file);
    expect(await again.length('t')).toBe(1);
    await again.close();
  });

  it('backs up to a new file only, complete or not at all', async () => {
    const file = scratch();
    const s = new SqliteConversationStore(file);
    await commitText(s, 0);
    const dest = `${file}.bak`;
    await s.backup(dest);
    expect(existsSync(`${dest}.partial`)).toBe(false);
    await expect(s.backup(dest)).rejects.toThrow(/exists/);
    await s.close();
    const check = new Database(dest, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(check.prepare('SELECT COUNT(*) FROM items').pluck().get()).toBe(1);
    check.close();
  });
});

describe('infinity-temporal backup', () => {
  const cli = cliRunner(() => [], { INFINITY_STORE: '' });

  it('copies a store that another process is writing, as a real process; refuses to overwrite', async () => {
    const file = scratch();
    const s = new SqliteConversationStore(file);
    await commitText(s, 0);
    await commitText(s, 1); // still in the -wal: a plain copy of the file would miss it
    const dest = `${file}.bak`;
    const r = await cli.run('backup', '--store', file, dest);
    expect(r).toMatchObject({ code: 0, stdout: `backed up ${file} to ${dest}\n` });
    expect(await commitText(s, 2)).toBe('committed'); // the writer never noticed
    const copy = new SqliteConversationStore(dest, { readonly: true });
    expect((await copy.load('t')).map((x) => x.item)).toEqual([
      { kind: 'user', text: 'text 0' },
      { kind: 'user', text: 'text 1' },
    ]);
    await copy.close();
    await s.close();

    const again = await cli.run('backup', '--store', file, dest);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${dest} exists`);
    const none = await cli.run('backup', dest);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('pass --store');
  });
});

describe('a worker whose store file is lost', () => {
  const lostStore = lostStoreSetup('lost');
  let sys: TestSystem | undefined;
  const model = lostStore.echoModel;

  it('fails the next slice with the file named when the store is removed, and resumes after a restore', async () => {
    const m = model();
    sys = await lostStore.start(m);
    const thread = await sys.client.startThread({ threadId: uid('lost') });
    await thread.sendUserText('one');
    await thread.waitForIdle();
    const backup = `${sys.storePath}.bak`;
    await (sys.store as SqliteConversationStore).backup(backup); // online, while the worker runs
    const calls = m.requests.length;

    rmSync(sys.storePath);
    await thread.sendUserText('two');
    const failed = await thread.waitForIdle();
    expect(failed.lastError).toContain(`conversation store ${sys.storePath} was removed`);
    // Nothing reported committed: Temporal's view and the orphaned file both hold turn one only, and the model was
    // never called for the failed slice.
    expect(failed).toMatchObject({ historyLength: 2, slices: 1 });
    expect(render(await thread.history())).toEqual(['user: one', 'assistant: ok: one']);
    expect(m.requests.length).toBe(calls);

    const restored = await lostStore.restore(backup, m);
    await thread.sendUserText('three');
    const resumed = await thread.waitForIdle();
    expect(resumed.lastError).toBeUndefined();
    const items = (await restored.store.load(thread.threadId)).map((s) => s.item);
    // The failed slice ran again under its own id before the new text.
    expect(render(items)).toEqual([
      'user: one',
      'assistant: ok: one',
      'user: two',
      'assistant: ok: two',
      'user: three',
      'assistant: ok: three',
    ]);
  });

  it('fails the next slice when an older copy replaces the store, and shows the commit conflict after a restart on it', async () => {
    const m = model();
    sys = await lostStore.start(m);
    const thread = await sys.client.startThread({ threadId: uid('replaced') });
    await thread.sendUserText('one');
    await thread.waitForIdle();
    const older = `${sys.storePath}.older`;
    await (sys.store as SqliteConversationStore).backup(older);
    await thread.sendUserText('two');
    await thread.waitForIdle();

    const staged = `${sys.storePath}.staged`;
    copyFileSync(older, staged);
    renameSync(staged, sys.storePath);
    await thread.sendUserText('three');
    const failed = await thread.waitForIdle();
    expect(failed.lastError).toContain(`conversation store ${sys.storePath} was replaced by another file`);
    expect(failed).toMatchObject({ historyLength: 4, slices: 2 });

    // Restarted on the older file, the thread is ahead of its store: the conflict shows, nothing is overwritten.
    // (Polled, not waited for idle: the queued text keeps the workflow retrying its failed slice.)
    const restarted = await lostStore.restore(older, m);
    await thread.sendUserText('four');
    const conflict = `thread ${thread.threadId}: expected 4 committed items, found 2`;
    await eventually(
      async () => (await thread.status()).lastError === conflict,
      30_000,
      'the commit conflict in status',
    );
    expect(render((await restarted.store.load(thread.threadId)).map((s) => s.item))).toEqual([
      'user: one',
      'assistant: ok: one',
    ]);
  });
});
