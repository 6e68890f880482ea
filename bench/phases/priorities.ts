/**
 * Priorities (issue 16, decision 60): one user thread doing its turns while a flood of subscription events keeps
 * background threads busy on the same worker, with the runtime's priorities (user at key 2 in its own fair share,
 * background at 4) and without (everything at key 3 under one fairness key: first in, first out, as before), plus the
 * user thread alone. Each run has its own worker and task queue; the figure is the user's tool result → next
 * completion latency.
 */
import type { ThreadPriority } from '../../src/core/priority';
import { pool } from '../lib/fleet';
import { percentile } from '../lib/stats';
import type { PrioritiesResult, PriorityRun } from '../results';
import { type Bench, startFleet } from './context';

type Mode = 'alone' | 'without' | 'with';

/** What "without priorities" means: the same key and one fairness key for everyone, so dispatch is FIFO. */
const FLAT: ThreadPriority = { priorityKey: 3, fairnessKey: 'everyone' };

async function run(b: Bench, mode: Mode): Promise<PriorityRun> {
  const { cfg } = b;
  // The runtime's default workflow task slots (the waves run 100, as the baselines do): what a user's worker has.
  const fleet = await startFleet(b, 'ours', 200, cfg.priorityWorkflowSlots);
  const stamp = Date.now();
  try {
    b.sampler.phase = `priorities (${mode})`;
    const background =
      mode === 'alone' ? [] : Array.from({ length: cfg.priorityThreads }, (_, i) => `prio-bg-${mode}-${i}-${stamp}`);
    b.progress = `subscribing ${background.length} background threads`;
    await fleet.subscribeAll(background, mode === 'with' ? { priorityKey: 4 } : FLAT);
    fleet.resetCounters();
    const user = `prio-user-${mode}-${stamp}`;
    const started = performance.now();
    let floodMs = 0;
    let userMs = 0;
    const events = mode === 'alone' ? 0 : cfg.priorityEvents;
    b.progress = `${events} events into ${background.length} threads while one user thread runs ${cfg.priorityTurns} turns`;
    const flood = pool(
      Array.from({ length: events }, (_, i) => i),
      20,
      (i) => fleet.event(background[i % background.length]!, `Pipeline event ${i}: stage passed.`),
    ).then(() => (floodMs = performance.now() - started));
    const turns = fleet
      .runTurns([user], cfg.priorityTurns, cfg.toolDelayMs, 1, 0, mode === 'without' ? FLAT : undefined)
      .then(() => (userMs = performance.now() - started));
    await Promise.all([flood, turns]);
    return {
      p50: percentile(fleet.latencies, 50),
      p99: percentile(fleet.latencies, 99),
      n: fleet.latencies.length,
      events,
      floodMs,
      userMs,
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
  return {
    threads: cfg.priorityThreads,
    events: cfg.priorityEvents,
    turns: cfg.priorityTurns,
    toolDelayMs: cfg.toolDelayMs,
    workflowSlots: cfg.priorityWorkflowSlots,
    idleP50Ms: alone.p50,
    idleP99Ms: alone.p99,
    floodWithoutP50Ms: without.p50,
    floodWithoutP99Ms: without.p99,
    floodWithP50Ms: withPriorities.p50,
    floodWithP99Ms: withPriorities.p99,
    floodWithOverIdleP50: withPriorities.p50 / alone.p50,
    runs: { alone, without, with: withPriorities },
  };
}
