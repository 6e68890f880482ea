/**
 * `npx tsx bench/probes/turn-events.ts [turns] [designs]`: the history events one benchmark turn costs, by event type,
 * for each design (default `ours,v01,ceiling`): a few agents run the benchmark's turn pattern on a fresh dev server and
 * their histories are counted. A turn is user text → completion that calls the tool → tool result → completion.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { type Design, Fleet } from '../lib/fleet';
import { eventTypeName as typeName } from '../lib/history';
import { runMain } from '../lib/main';
import { probeBase } from '../lib/probe-base';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const turns = Number(process.argv[2] ?? 10);
  const designs = (process.argv[3] ?? 'ours,v01,ceiling').split(',') as Design[];
  const { server, fleetOptions } = await probeBase('turn-events');
  try {
    for (const design of designs) {
      const fleet = new Fleet({
        ...fleetOptions(design),
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
