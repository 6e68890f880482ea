/**
 * `npx tsx bench/probes/disk-per-agent.ts [agents]`: what one idle agent costs on disk, by table. Parks `agents`
 * (default 300) after one turn (waiting on a tool that never answers) on a fresh dev server, checkpoints both SQLite
 * files, and prints the growth of each table and index (SQLite's `dbstat`) per agent, plus the history events and
 * their payload bytes of one agent.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { AgentClient } from '../../src/client/agent-client';
import { startDevServer } from '../../src/devserver/server';
import { SimulatedModel } from '../../src/model/simulated';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { defineTool } from '../../src/tools/tool';
import { createAgentWorker } from '../../src/worker/create-worker';
import { eventTypeName } from '../lib/history';
import { runMain } from '../lib/main';

/** Bytes per table/index, after a checkpoint folds the WAL into the main file. */
function tableBytes(file: string): Map<string, number> {
  const db = new Database(file);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const rows = db.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name').all() as {
      name: string;
      bytes: number;
    }[];
    return new Map(rows.map((r) => [r.name, r.bytes]));
  } finally {
    db.close();
  }
}

function printGrowth(
  label: string,
  before: Map<string, number>,
  after: Map<string, number>,
  agents: number,
  file: string,
): void {
  const rows = [...after]
    .map(([name, bytes]) => ({ name, per: (bytes - (before.get(name) ?? 0)) / agents }))
    .filter((r) => r.per > 1);
  rows.sort((a, b) => b.per - a.per);
  const sum = rows.reduce((s, r) => s + r.per, 0);
  console.log(
    `${label}: ${(sum / 1024).toFixed(2)} KiB per agent in pages (file ${(statSync(file).size / 1024 / 1024).toFixed(1)} MiB)`,
  );
  for (const r of rows.slice(0, Number(process.env.ROWS ?? 14)))
    console.log(`  ${r.name.padEnd(48)} ${(r.per / 1024).toFixed(2)} KiB`);
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const agents = Number(process.argv[2] ?? 300);
  const work = mkdtempSync(join(tmpdir(), 'infinity-disk-'));
  const storePath = join(work, 'conversations.sqlite');
  const dbFile = join(work, 'temporal.sqlite');
  const server = await startDevServer({ ui: false, dbFilename: dbFile });
  const store = new SqliteConversationStore(storePath);
  const connection = await NativeConnection.connect({ address: server.address });
  const parked = new Set<string>();
  const tool = defineTool({
    name: 'bench_tool',
    description: 'answers much later',
    parameters: { type: 'object' },
    execute: (_a, ctx) => void parked.add(ctx.threadId),
  });
  const taskQueue = `disk-${Date.now()}`;
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    store,
    model: new SimulatedModel({ toolName: 'bench_tool' }),
    tools: [tool],
  });
  const running = worker.run();
  const client = new AgentClient({
    client: new Client({ connection: await Connection.connect({ address: server.address }) }),
    taskQueue,
  });
  try {
    // One warm-up agent, so the namespace's and task queue's first rows are not counted.
    await client.sendUserText('warm-up', 'Is build 1 green?');
    while (!parked.has('warm-up')) await new Promise((r) => setTimeout(r, 50));
    const beforeT = tableBytes(dbFile);
    const beforeS = tableBytes(storePath);
    const ids = Array.from({ length: agents }, (_, i) => `disk-${i}`);
    for (let i = 0; i < ids.length; i += 50)
      await Promise.all(ids.slice(i, i + 50).map((id) => client.sendUserText(id, 'Turn 0: is build 1 green?')));
    while (ids.some((id) => !parked.has(id))) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 2000));
    printGrowth('Temporal (dev server SQLite)', beforeT, tableBytes(dbFile), agents, dbFile);
    printGrowth('conversation store', beforeS, tableBytes(storePath), agents, storePath);
    const events = (await client.temporal.workflow.getHandle(ids[0]!).fetchHistory()).events ?? [];
    let payload = 0;
    for (const e of events) {
      const bytes = JSON.stringify(e).length;
      payload += bytes;
      console.log(`  ${eventTypeName(e.eventType).padEnd(40)} ~${bytes} B as JSON`);
    }
    if (process.env.DUMP)
      console.log(
        JSON.stringify(events, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString() : v), 1),
      );
    console.log(`one agent: ${events.length} events, ~${(payload / 1024).toFixed(1)} KiB as JSON`);
  } finally {
    await worker.shutdown();
    await running;
    await store.close();
    await server.stop();
  }
}

runMain(main);
