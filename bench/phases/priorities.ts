/**
 * Priorities (issue 16, decisions 60 and 64): one user thread doing its turns while a flood of subscription events
 * keeps background threads busy on the same worker, with the runtime's priorities (user at key 2 in its own fair
 * share, background at 4), without them (everything at key 3 under one fairness key: first in, first out, as before),
 * with them on a worker that has a CPU target, plus the user thread alone. Each run has its own worker and task
 * queue; the figure is the user's tool result → next completion latency, and what the flood cost is the time the
 * background threads took to take in every event.
 */
import type { ThreadPriority } from '../../src/core/priority';
import { epochMs, pool } from '../lib/fleet';
import { percentile } from '../lib/stats';
import type { PrioritiesResult, PriorityRun } from '../results';
import { type Bench, sleep, startFleet } from './context';

type Mode = 'alone' | 'without' | 'with' | 'targets';

/** What "without priorities" means: the same key and one fairness key for everyone, so dispatch is FIFO. */
const FLAT: ThreadPriority = { priorityKey: 3, fairnessKey: 'everyone' };

/** No background turn ending for this long after the flood is sent: the backlog is drained. */
const QUIET_MS = 3_000;
const DRAIN_LIMIT_MS = 600_000;

async function run(b: Bench, mode: Mode): Promise<PriorityRun> {
  const { cfg } = b;
  // The runtime's default workflow task slots (the waves run 100, as the baselines do): what a user's worker has.
  const fleet = await startFleet(
    b,
    'ours',
    200,
    cfg.priorityWorkflowSlots,
    mode === 'targets' ? cfg.priorityCpuTarget : undefined,
  );
  const stamp = Date.now();
  try {
    b.sampler.phase = `priorities (${mode})`;
    const background =
      mode === 'alone' ? [] : Array.from({ length: cfg.priorityThreads }, (_, i) => `prio-bg-${mode}-${i}-${stamp}`);
    b.progress = `subscribing ${background.length} background threads`;
    await fleet.subscribeAll(background, mode === 'without' ? FLAT : { priorityKey: 4 });
    fleet.resetCounters();
    const user = `prio-user-${mode}-${stamp}`;
    const started = performance.now();
    const startedAt = epochMs();
    let floodMs = 0;
    let userMs = 0;
    const events = mode === 'alone' ? 0 : cfg.priorityEvents;
    const rate = cfg.priorityFloodRate;
    b.progress = `${events} events into ${background.length} threads${rate > 0 ? ` at ${rate}/s` : ''} while one user thread runs ${cfg.priorityTurns} turns`;
    const flood = pool(
      Array.from({ length: events }, (_, i) => i),
      20,
      async (i) => {
        // Paced: event i leaves at i / rate seconds, so the flood holds its rate however fast the server takes it.
        if (rate > 0) await sleep(started + (i * 1000) / rate - performance.now());
        await fleet.event(background[i % background.length]!, `Pipeline event ${i}: stage passed.`);
      },
    ).then(() => (floodMs = performance.now() - started));
    const turns = fleet
      .runTurns([user], cfg.priorityTurns, cfg.toolDelayMs, 1, 0, mode === 'without' ? FLAT : undefined)
      .then(() => (userMs = performance.now() - started));
    await Promise.all([flood, turns]);
    // The user's turns ended too, so wait for quiet after the later of both.
    while (events > 0 && epochMs() - Math.max(fleet.lastEndAt, startedAt + floodMs) < QUIET_MS) {
      if (epochMs() - startedAt > DRAIN_LIMIT_MS)
        throw new Error(`the background backlog did not drain in ${DRAIN_LIMIT_MS} ms`);
      await sleep(250);
    }
    const userCompletions = 2 * cfg.priorityTurns;
    return {
      p50: percentile(fleet.latencies, 50),
      p99: percentile(fleet.latencies, 99),
      n: fleet.latencies.length,
      events,
      floodMs,
      userMs,
      drainedMs: events > 0 ? fleet.lastEndAt - startedAt : 0,
      backgroundCompletions: Math.max(0, fleet.completions - userCompletions),
      errors: fleet.errors,
    };
  } finally {
    await fleet.stop();
    b.current = undefined;
  }
}

export async function prioritiesPhase(b: Bench): Promise<PrioritiesResult | undefined> {
  const { cfg } = b;
  if (cfg.priorityEvents <= 0 || cfg.priorityThreads <= 0 || cfg.priorityTurns <= 0) return undefined;
  const alone = await run(b, 'alone');
  const without = await run(b, 'without');
  const withPriorities = await run(b, 'with');
  const targets = await run(b, 'targets');
  return {
    threads: cfg.priorityThreads,
    events: cfg.priorityEvents,
    turns: cfg.priorityTurns,
    toolDelayMs: cfg.toolDelayMs,
    workflowSlots: cfg.priorityWorkflowSlots,
    cpuTarget: cfg.priorityCpuTarget,
    floodRate: cfg.priorityFloodRate,
    idleP50Ms: alone.p50,
    idleP99Ms: alone.p99,
    floodWithoutP50Ms: without.p50,
    floodWithoutP99Ms: without.p99,
    floodWithP50Ms: withPriorities.p50,
    floodWithP99Ms: withPriorities.p99,
    floodWithOverIdleP50: withPriorities.p50 / alone.p50,
    floodWithTargetsP50Ms: targets.p50,
    floodWithTargetsP99Ms: targets.p99,
    floodWithTargetsOverIdleP50: targets.p50 / alone.p50,
    runs: { alone, without, with: withPriorities, targets },
  };
}
