/**
 * The CLI never prints a PostgreSQL password: real CLI processes against the suite's real PostgreSQL, with the
 * password in the URL's userinfo and in its query (`?password=`), and a `?sslkey=` path that `pg` quotes in its error.
 * Whatever they print, on stdout or stderr, holds none of it.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { cliRunner, waitForLine } from './cli-process';
import { createTestDatabase } from './postgres';

// The test server trusts loopback connections, so any password gets in; a server that asks for one gets its own.
const SECRETS = [`pw-${randomUUID().slice(0, 8)}`, `qs-${randomUUID().slice(0, 8)}`];
let url = '';
let withQuery = '';

function secretUrls(base: string): { userinfo: string; query: string } {
  const u = new URL(base);
  if (u.password) SECRETS.splice(0, 2, decodeURIComponent(u.password), decodeURIComponent(u.password));
  else u.password = SECRETS[0]!;
  const userinfo = u.toString();
  const q = new URL(base);
  q.password = '';
  q.searchParams.set('password', SECRETS[1]!);
  q.searchParams.set('application_name', 'cli-secrets');
  return { userinfo, query: q.toString() };
}

const { run, start } = cliRunner(() => ['--address', inject('temporalAddress'), '--task-queue', `cli-secrets`], {});
const cli = (store: string, ...args: string[]) => run('--store', store, ...args);

function expectNoSecret(output: { stdout: string; stderr: string }, secrets: readonly string[] = SECRETS): void {
  for (const s of secrets) {
    expect(output.stdout).not.toContain(s);
    expect(output.stderr).not.toContain(s);
  }
}

beforeAll(async () => {
  ({ userinfo: url, query: withQuery } = secretUrls(await createTestDatabase('secrets')));
});

it('history of a thread without history names the store without its password', async () => {
  for (const store of [url, withQuery]) {
    const r = await cli(store, 'history', `none-${randomUUID().slice(0, 8)}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('has no committed history in postgres');
    expect(r.stderr).toContain('***');
    expectNoSecret(r);
  }
});

it('backup of a PostgreSQL store points to pg_dump without printing the password', async () => {
  for (const store of [url, withQuery]) {
    const r = await cli(store, 'backup', join(inject('scratchDir'), 'never.sqlite'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is a PostgreSQL database: back it up with pg_dump');
    expectNoSecret(r);
  }
});

it("an error from pg that quotes the URL's secrets (an ssl key file it cannot read) prints them redacted", async () => {
  const key = `/nonexistent/${randomUUID().slice(0, 8)}-client.key`;
  const u = new URL(withQuery);
  u.searchParams.set('sslkey', key);
  const r = await cli(u.toString(), 'history', 'any-thread');
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('ENOENT');
  expectNoSecret(r, [...SECRETS, key]);
});

let worker: ChildProcess | undefined;
afterAll(async () => {
  worker?.kill('SIGTERM');
  if (worker && worker.exitCode === null) await new Promise((r) => worker!.once('close', r));
});

it("the worker's start line names the store without its password", async () => {
  worker = start(['--store', withQuery, 'worker', '--model', 'simulated', '--no-events']);
  let printed = '';
  worker.stderr!.on('data', (d: Buffer) => (printed += d.toString()));
  const line = await waitForLine(worker, /^(store .*)$/);
  expect(line).toContain('password=***');
  expect(line).toContain('application_name=cli-secrets');
  expectNoSecret({ stdout: line, stderr: printed });
});
