/**
 * `npx tsx bench/probes/park-rate.ts [agents] [designs]`: how fast each design parks agents (start a thread with its
 * first user text, run the completion that calls a tool nobody answers), and the CPU each process spends per parked
 * agent, on a fresh dev server per design (`ours`, `v01` or `ceiling`), and the history events of one parked agent.
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
import { cpuSeconds, treeCpu } from '../lib/proc';
import { writeThreadBundle } from '../lib/bundle';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const agents = Number(process.argv[2] ?? 2000);
  const designs = (process.argv[3] ?? 'ours,ceiling').split(',') as Design[];
  // A blocking agent holds an activity slot while it waits: 2,000 of them are not a rate, they are a stall.
  if (designs.includes('blocking')) throw new Error('park-rate measures ours, v01 or ceiling, not blocking');
  const work = mkdtempSync(join(tmpdir(), 'infinity-park-rate-'));
  const bundlePath = await writeThreadBundle(work);
  for (const design of designs) {
    const storeFile = join(work, `${design}.sqlite`);
    new SqliteConversationStore(storeFile).close();
    const server = await startDevServer({ ui: false, dbFilename: join(work, `${design}-temporal.sqlite`) });
    const fleet = new Fleet({
      design,
      address: server.address,
      store: storeFile,
      bundlePath,
      maxCachedWorkflows: agents + 100,
      activitySlots: 50,
    });
    try {
      await fleet.start();
      // Warm-up: the first starts pay for caches and connections.
      await fleet.park(
        Array.from({ length: 100 }, (_, i) => `${design}-warm-${i}`),
        200,
      );
      // The driver's own CPU only: the server and the worker are its children.
      const read = () => ({
        server: treeCpu(server.pid),
        worker: treeCpu(fleet.pid!),
        driver: cpuSeconds(process.pid),
      });
      const cpu0 = read();
      const t0 = performance.now();
      const ids = Array.from({ length: agents }, (_, i) => `${design}-park-${i}`);
      await fleet.park(ids, 200);
      const seconds = (performance.now() - t0) / 1000;
      const cpu1 = read();
      const cpu = (Object.keys(cpu1) as (keyof typeof cpu1)[])
        .map((k) => `${k} ${(((cpu1[k] - cpu0[k]) * 1000) / agents).toFixed(2)}`)
        .join(', ');
      console.log(`${design}: ${(agents / seconds).toFixed(1)} agents parked/s; CPU ms per agent: ${cpu}`);
      const events = (await fleet.temporal.workflow.getHandle(ids[0]!).fetchHistory()).events ?? [];
      console.log(`  ${events.length} events: ${events.map((e) => typeName(e.eventType)).join(', ')}`);
    } finally {
      await fleet.stop();
      await server.stop();
    }
  }
}

runMain(main);
