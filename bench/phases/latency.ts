/**
 * Latency below saturation. The waves run the system saturated (every agent acts the moment its tool answers), so
 * their latency is queueing; here many agents are active at once, their first messages spread over the tool delay,
 * each tool answering after a long time, one turn each.
 */
import type { Design, Fleet } from '../lib/fleet';
import { percentile } from '../lib/stats';
import type { LatencyResult } from '../results';
import type { Bench } from './context';

export async function latencyPhase(b: Bench, design: Design, fleet: Fleet): Promise<LatencyResult | undefined> {
  const { cfg } = b;
  if (cfg.latencyAgents <= 0) return undefined;
  b.current = fleet;
  b.sampler.phase = `${design} latency`;
  b.progress = `${cfg.latencyAgents} agents, tools answering after ${cfg.latencyToolDelayMs} ms`;
  fleet.resetCounters();
  const ids = Array.from({ length: cfg.latencyAgents }, (_, i) => `${design}-lat-${i}-${Date.now()}`);
  await fleet.runTurns(ids, 1, cfg.latencyToolDelayMs, 200, cfg.latencyToolDelayMs);
  return {
    agents: ids.length,
    toolDelayMs: cfg.latencyToolDelayMs,
    p50: percentile(fleet.latencies, 50),
    p99: percentile(fleet.latencies, 99),
    n: fleet.latencies.length,
  };
}
