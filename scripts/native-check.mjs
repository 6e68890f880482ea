#!/usr/bin/env node
/**
 * The native modules under the node that runs this (`scripts/node-lines.sh check`; .ci/run runs it on every Node.js
 * line before that line's tests): better-sqlite3, built per ABI, opens a database and runs a statement; the Temporal
 * SDK's native bridge (@temporalio/core-bridge, N-API binaries shipped in its package) loads, starts its runtime, and
 * answers an async call from Rust (a client's connection to a closed loopback port fails as a TransportError). Prints
 * one line per module; exits 1 on the first failure.
 */
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import process from 'node:process';

const require = createRequire(import.meta.url);
const say = (/** @type {string} */ line) => process.stdout.write(`${line}\n`);
const fail = (/** @type {string} */ line) => {
  process.stderr.write(`${line}\n`);
  process.exit(1);
};
const started = Date.now();
say(
  `node ${process.version} · ABI ${process.versions.modules} · N-API ${process.versions.napi} · ${process.platform}-${process.arch}`,
);

try {
  const Database = require('better-sqlite3');
  const db = new Database(':memory:');
  const { version } = db.prepare('select sqlite_version() as version').get();
  db.close();
  const addon = require.resolve('better-sqlite3/build/Release/better_sqlite3.node');
  say(`better-sqlite3 ${require('better-sqlite3/package.json').version}: loads, SQLite ${version} (${addon})`);
} catch (err) {
  fail(`better-sqlite3 does not load under ${process.version}: ${err instanceof Error ? err.message : err}`);
}

try {
  const { getPrebuiltPath } = require('@temporalio/core-bridge/common');
  const { native } = require('@temporalio/core-bridge');
  const { NativeConnection, Runtime, DefaultLogger } = require('@temporalio/worker');
  const runtime = Runtime.install({ logger: new DefaultLogger('ERROR') });
  const port = await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port: p } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(p));
    });
  });
  const refused = await NativeConnection.connect({ address: `127.0.0.1:${port}` }).then(
    (c) => c.close().then(() => 'connected'),
    (err) => (err instanceof Error ? err.name : String(err)),
  );
  if (refused === 'connected') throw new Error(`a connection to the closed port ${port} succeeded`);
  await runtime.shutdown();
  const bridge = require('@temporalio/core-bridge/package.json').version;
  const took = `${Date.now() - started} ms`;
  say(
    `@temporalio/core-bridge ${bridge}: loads (${Object.keys(native).length} native functions), runtime starts, ` +
      `a connection to a closed port fails as ${refused} (${getPrebuiltPath()}); ${took}`,
  );
} catch (err) {
  fail(`@temporalio/core-bridge fails under ${process.version}: ${err instanceof Error ? err.stack : err}`);
}
