/**
 * `npx tsx bench/probes/turn-events.ts [turns] [designs]`: the history events one benchmark turn costs, by event type,
 * for each design (default `ours,v01,ceiling`): a few agents run the benchmark's turn pattern on a fresh dev server and
 * their histories are counted. A turn is user text → completion that calls the tool → tool result → completion.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startDevServer } from '../../src/devserver/server';
import { SqliteConversationStore } from '../../src/store/sqlite';
import { type Design, Fleet } from '../lib/fleet';
import { eventTypeName as typeName } from '../lib/history';
import { runMain } from '../lib/main';
import { writeThreadBundle } from '../lib/bundle';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const turns = Number(process.argv[2] ?? 10);
  const designs = (process.argv[3] ?? 'ours,v01,ceiling').split(',') as Design[];
  const work = mkdtempSync(join(tmpdir(), 'infinity-turn-events-'));
  const storeFile = join(work, 'conversations.sqlite');
  new SqliteConversationStore(storeFile).close();
  const server = await startDevServer({ ui: false, dbFilename: join(work, 'temporal.sqlite') });
  const bundlePath = await writeThreadBundle(work);
  try {
    for (const design of designs) {
      const fleet = new Fleet({
        design,
        address: server.address,
        store: storeFile,
        bundlePath,
        maxCachedWorkflows: 100,
        activitySlots: 50,
      });
      await fleet.start();
      const ids = Array.from({ length: 5 }, (_, i) => `${design}-te-${i}-${Date.now()}`);
      await fleet.runTurns(ids, turns, 20);
      const counts: Record<string, number> = {};
      let total = 0;
      for (const id of ids) {
        const events = (await fleet.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
        for (const e of events) counts[typeName(e.eventType)] = (counts[typeName(e.eventType)] ?? 0) + 1;
        total += events.length;
      }
      if (process.env.SHOW_EVENTS) {
        const events = (await fleet.temporal.workflow.getHandle(ids[0]!).fetchHistory()).events ?? [];
        console.log(events.map((e) => typeName(e.eventType)).join('\n'));
      }
      const per = (n: number) => (n / ids.length / turns).toFixed(2);
      console.log(`${design}: ${per(total)} events per turn over ${turns} turns`);
      for (const [k, n] of Object.entries(counts).sort((a, b) => b[1] - a[1]))
        console.log(`  ${k.padEnd(40)} ${per(n)}`);
      await fleet.stop();
    }
  } finally {
    await server.stop();
  }
}

runMain(main);
