/**
 * Starts Temporal's time-skipping test server (installed by ./install.ts) on a free loopback port, with the thread
 * workflow's search attributes registered, and gives its test service: time stands still until a test unlocks it, and
 * while it is unlocked the server jumps its clock to the next timer whenever nothing is running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Connection, type TestService } from '@temporalio/client';
// Not in the package's index: the option that gives a connection its `testService` (as @temporalio/testing does).
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
import { temporal } from '@temporalio/proto';
import { FORK_SEARCH_ATTRIBUTE, THREAD_SEARCH_ATTRIBUTES, TITLE_SEARCH_ATTRIBUTE } from '../../src/devserver/server';
import { killOnExit } from '../../src/devserver/kill-on-exit';

export interface TimeSkippingServer {
  /** `127.0.0.1:<port>`, namespace `default`. */
  address: string;
  /** A client connection with the test service. */
  connection: Connection;
  testService: TestService;
  /** The server's clock, epoch milliseconds. */
  now(): Promise<number>;
  /** Lets the server skip time until `fn` settles, then stops it again. */
  skipping<T>(fn: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const INDEXED = temporal.api.enums.v1.IndexedValueType;

export async function startTimeSkippingServer(lib: string): Promise<TimeSkippingServer> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    'java',
    ['-cp', join(lib, '*'), 'io.temporal.testserver.TestServer', String(port)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const cancelKill = killOnExit(child, 'SIGKILL');
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let connection: Connection | undefined;
  for (let waited = 0; !connection; waited += 250) {
    if (child.exitCode !== null) throw new Error(`the test server exited (${child.exitCode}):\n${stderr}`);
    try {
      connection = await Connection.connect({
        address,
        connectTimeout: 1000,
        [InternalConnectionOptionsSymbol]: { supportsTestService: true },
      } as Parameters<typeof Connection.connect>[0]);
    } catch (e) {
      if (waited > 60_000) {
        child.kill('SIGKILL');
        throw new Error(`the test server did not answer on ${address} within 60 s: ${String(e)}\n${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const testService = connection.testService!;
  const attributes = { ...THREAD_SEARCH_ATTRIBUTES, ...TITLE_SEARCH_ATTRIBUTE, ...FORK_SEARCH_ATTRIBUTE };
  await connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(
      Object.entries(attributes).map(([k, v]) => [
        k,
        v === 'Text' ? INDEXED.INDEXED_VALUE_TYPE_TEXT : INDEXED.INDEXED_VALUE_TYPE_KEYWORD,
      ]),
    ),
  });
  return {
    address,
    connection,
    testService,
    async now() {
      const { time } = await testService.getCurrentTime({});
      return Number(time?.seconds ?? 0) * 1000 + Math.floor((time?.nanos ?? 0) / 1e6);
    },
    async skipping(fn) {
      await testService.unlockTimeSkipping({});
      try {
        return await fn();
      } finally {
        await testService.lockTimeSkipping({});
      }
    },
    async stop() {
      await connection.close();
      cancelKill();
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
