/**
 * `npx tsx bench/probes/worker-rss.ts`: the resident memory of an idle worker process, broken down (anonymous vs file
 * pages, V8 heap, external), for an agent worker under tsx, the same compiled by `npm run build` and run by plain node,
 * and a bare Temporal worker with the same workflow bundle (the SDK's floor). Each sample is taken 10 s after the worker runs,
 * after a full GC.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startDevServer } from '../../src/devserver/server';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { runMain } from '../lib/main';
import { writeThreadBundle } from '../lib/bundle';

const root = join(__dirname, '..', '..');

async function sample(label: string, args: string[], env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, ['--expose-gc', ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
  await new Promise((r) => child.once('message', r));
  await new Promise((r) => setTimeout(r, 10_000));
  const m = await new Promise<Record<string, number>>((resolve) => {
    child.once('message', (x) => resolve(x as Record<string, number>));
    child.send('sample');
  });
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  console.log(
    `${label.padEnd(34)} ${Object.entries(m)
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join(' · ')}`,
  );
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const work = mkdtempSync(join(tmpdir(), 'infinity-worker-rss-'));
  const storePath = join(work, 'conversations.sqlite');
  await new SqliteConversationStore(storePath).close(); // creates the store's file and schema
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const bundlePath = await writeThreadBundle(work);
  const env = { TEMPORAL_ADDRESS: server.address, STORE_PATH: storePath, BUNDLE_PATH: bundlePath };
  const child = join(__dirname, 'worker-rss-child.ts');
  const built = join(root, 'dist', 'bench', 'probes', 'worker-rss-child.js');
  try {
    for (let i = 0; i < Number(process.argv[2] ?? 1); i++) {
      await sample('bare Temporal worker (tsx)', ['--import', 'tsx', child], { ...env, KIND: 'bare' });
      await sample('agent worker (tsx)', ['--import', 'tsx', child], env);
      if (existsSync(built)) {
        await sample('agent worker (node, dist/)', [built], env);
        await sample('  + MALLOC_ARENA_MAX=2', [built], { ...env, MALLOC_ARENA_MAX: '2' });
      } else console.log('(no dist/: run `npm run build` to sample the compiled worker)');
    }
  } finally {
    await server.stop();
  }
}

runMain(main);
