/**
 * `npx tsx bench/probes/can-task.ts [turns]`: the workflow task in which a thread continues-as-new, event by event: one
 * agent of the benchmark's turn runs past its run's event bound, and the last events of its first run are printed
 * with their times (how long the continue-as-new task took, and what ran in it).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Fleet } from '../lib/fleet';
import { eventTypeName as typeName } from '../lib/history';
import { runMain } from '../lib/main';
import { probeBase } from '../lib/probe-base';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const turns = Number(process.argv[2] ?? 30);
  const { server, fleetOptions } = await probeBase('can-task');
  const fleet = new Fleet({
    ...fleetOptions(),
    threadOptions: { maxRunEvents: Number(process.env.MAX_RUN_EVENTS ?? 200) },
  });
  try {
    await fleet.start();
    const id = `can-${Date.now()}`;
    await fleet.runTurns([id], turns, 0);
    const latest = await fleet.temporal.workflow.getHandle(id).fetchHistory();
    const runId = latest.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    const first = await fleet.temporal.workflow.getHandle(id, runId).fetchHistory();
    const events = first.events ?? [];
    const ms = (e: (typeof events)[number]) =>
      Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6);
    const t0 = ms(events[0]!);
    for (const e of events.slice(-16))
      console.log(`${String(ms(e) - t0).padStart(7)} ms  ${e.eventId} ${typeName(e.eventType)}`);
    console.log(`latencies (ms): ${fleet.latencies.map((l) => l.toFixed(0)).join(' ')}`);
  } finally {
    await fleet.stop();
    await server.stop();
  }
}

runMain(main);
