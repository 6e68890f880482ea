/**
 * `npx tsx bench/probes/agent-resolve.ts [slices=1000000]`: the CPU a slice spends finding its agent (issue 40), the
 * only step of a slice that differs between a thread of one agent and threads of several (`runtimeFor` in
 * src/activities/slice.ts: the worker's catalog resolves the thread's agent name, then its runtime is looked up by
 * definition). Times that step over `slices` slices whose threads all name `alpha`, then alternate `alpha` and
 * `beta` (the benchmark's agents, bench/lib/bench-agents.ts), each three times interleaved; and what deriving an
 * agent's runtime once costs (its definition hash and tool map), which a worker does once per definition.
 * Complements bench/probes/agents-waves.ts, whose waves cannot resolve a few microseconds on a shared machine.
 */
import { agentCatalog, definitionHash } from '../../src/activities/agents';
import { SimulatedModel } from '../../src/model/simulated';
import { positionals } from '../lib/args';
import { BENCH_AGENTS, benchAgents } from '../lib/bench-agents';
import { runMain } from '../lib/main';
import { median } from '../lib/stats';

async function main() {
  const slices = Number(positionals()[0] ?? 1_000_000);
  const agents = benchAgents(new SimulatedModel(), () => {});
  const catalog = agentCatalog({ agents, fallback: agents[0]!.name });
  // As slice.ts: one runtime per definition, in a WeakMap.
  const runtimes = new WeakMap<object, { name: string }>();
  const runtimeFor = async (threadId: string, agent: string) => {
    const def = (await catalog.resolve({ threadId, agent }))!;
    let rt = runtimes.get(def);
    if (!rt) runtimes.set(def, (rt = { name: def.name }));
    return rt;
  };
  const time = async (names: readonly string[]) => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < slices; i++) await runtimeFor(`t-${i & 1023}`, names[i % names.length]!);
    const t = process.cpuUsage(t0);
    return ((t.user + t.system) * 1000) / slices; // ns per slice
  };
  const one: number[] = [];
  const two: number[] = [];
  await time(BENCH_AGENTS); // warm-up
  for (let r = 0; r < 3; r++) {
    one.push(await time([BENCH_AGENTS[0]]));
    two.push(await time(BENCH_AGENTS));
  }
  const n = 10_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) definitionHash(`instructions ${i}`, agents[1]!.tools, ['simulated']);
  const t = process.cpuUsage(t0);
  console.log(
    `resolve + runtime lookup per slice: one agent ${median(one).toFixed(0)} ns, two agents ${median(two).toFixed(0)} ns`,
  );
  console.log(
    `  runs (ns): one ${one.map((x) => x.toFixed(0)).join(', ')}; two ${two.map((x) => x.toFixed(0)).join(', ')}`,
  );
  console.log(`definition hash (once per definition): ${(((t.user + t.system) / n) * 1000).toFixed(0)} ns`);
}

if (require.main === module) runMain(main);
