/**
 * THE table of configurations a user can choose, and the cells the guarantee suite runs. A new configuration option
 * is one more entry in {@link DIMENSIONS} (its values) and, if some values cannot meet, a line in {@link allowed};
 * `systems.ts` then says how a system is built with it. Every scenario runs over the pairwise cells, plus the cells
 * that must exist (every scenario under `by-kind` with `startLocalSystem` and with `dev`, the shipped defaults).
 */
import { allPairs, type Cell, fullProduct } from './pairwise';

const VALUES = {
  scenario: [
    'result 1 B',
    'result 127 KiB',
    'result 129 KiB',
    'result 1 MiB',
    'result 16 MiB',
    'staged event',
    'staged report',
    'continue-as-new with staged queue',
    'flood 3000',
    'worker killed mid-slice',
    'rewind with a call pending',
    'cancelled tree',
    'queried while slicing',
    'followed mid-run',
    'over budget',
    'migrated with a call pending',
    'child of another agent, moved',
    'agent missing, moved',
  ],
  signalNames: ['input', 'by-kind'],
  store: ['memory', 'sqlite', 'postgres'],
  slicePath: ['local', 'adopted', 'retry'],
  delivery: ['signal', 'ack', 'rap', 'cli', 'temporal-cli'],
  defaults: ['startLocalSystem', 'dev', 'worker+client'],
  /** `throttled`: the worker has provider limits (issue 27 §2), and their key is closed when the scenario starts. */
  limits: ['none', 'throttled'],
  /**
   * Agents (issue 40). `one`: the system hosts only its default agent (the model and tools it was given), as every
   * system did before agents. `several`: it also hosts `planner` and `helper` (agents.ts: the guarantee tools, the
   * suite's model, instructions of their own), and every thread a scenario starts names `planner` (`startThread`,
   * the `sendUserText` that creates a thread, the flood's start), so its slices, and its children's (a child without
   * `agent` is of its parent's), resolve a named agent through the worker's catalog. Naming the agent at start, rather
   * than making a named agent the worker's default (`createAgentWorker({ agents, defaultAgent })` without `model`),
   * takes the same path under every value of `defaults`: `startLocalSystem` always has a model (so always a default
   * agent of its own), and `dev` always has `--model`; its `--tools` module (dev-agents.ts) exports the `agents`.
   * run-cells.ts checks that every model request of such a cell carried an agent's instructions.
   */
  agents: ['one', 'several'],
} as const;

/** Each dimension's values (a subset of them in a tier, e.g. the light scenarios). */
export type Dimensions = { [K in keyof typeof VALUES]: readonly (typeof VALUES)[K][number][] };
export const DIMENSIONS: Dimensions = VALUES;
export type MatrixCell = Cell<Dimensions>;
export type Scenario = MatrixCell['scenario'];

/** Heavy scenarios run in the soak tier only (`npm run test:soak`). */
export const HEAVY: readonly Scenario[] = ['result 16 MiB', 'flood 3000', 'worker killed mid-slice'];

/** Combinations that cannot exist, each with why. */
export function allowed(c: Partial<MatrixCell>): boolean {
  // `dev` has no option for either: its own dev server means `by-kind`, its store is the SQLite file in --data-dir.
  if (c.defaults === 'dev' && (c.signalNames === 'input' || (c.store !== undefined && c.store !== 'sqlite')))
    return false;
  // The failing commit that forces a regular-activity retry is a store wrapper: it needs the worker in this process.
  if (c.defaults === 'dev' && c.slicePath === 'retry') return false;
  // An input a `deliver` update admits into an idle thread runs in a regular activity, never a local slice that could
  // be handed off and adopted (decision 67: such an input is in no history until its task completes).
  // The CLI's `deliver` is acknowledged by default, so the same holds for it.
  if ((c.delivery === 'ack' || c.delivery === 'cli') && c.slicePath === 'adopted') return false;
  // The CLI is another process: it cannot stage into this process's memory.
  if (c.store === 'memory' && c.delivery === 'cli') return false;
  // A child's report is no RAP callback; user texts (the flood, continue-as-new, the crash) are no RAP callback either.
  if (
    c.delivery === 'rap' &&
    (c.scenario === 'staged report' ||
      c.scenario?.startsWith('continue') ||
      c.scenario?.startsWith('flood') ||
      c.scenario?.startsWith('worker'))
  )
    return false;
  // The killed worker is a process of its own, with no provider limits and no agents but its default one.
  if (c.scenario === 'worker killed mid-slice' && (c.limits === 'throttled' || c.agents === 'several')) return false;
  // A child of another agent needs the other agents: a system of its default agent alone has none.
  if (c.scenario === 'child of another agent, moved' && c.agents === 'one') return false;
  // The thread is moved to `planner`; its inputs are user texts (no RAP callback), and a refused slice commits
  // nothing, so no commit can fail once to force the regular-activity retry.
  if (c.scenario === 'agent missing, moved' && (c.agents === 'one' || c.delivery === 'rap' || c.slicePath === 'retry'))
    return false;
  // Thousands of inputs by spawned processes would measure process start-up, not the runtime.
  if (c.scenario === 'flood 3000' && (c.delivery === 'cli' || c.delivery === 'temporal-cli')) return false;
  // The killed worker is a process of its own (the README's createAgentWorker) on a store both processes open.
  if (
    c.scenario === 'worker killed mid-slice' &&
    (c.defaults !== 'worker+client' || c.store === 'memory' || c.slicePath === 'retry')
  )
    return false;
  return true;
}

const byName = (c: MatrixCell) => Object.values(c).join(' | ');

function withMust(cells: MatrixCell[], scenarios: readonly Scenario[]): MatrixCell[] {
  const out = new Map(cells.map((c) => [byName(c), c]));
  for (const scenario of scenarios)
    for (const defaults of ['startLocalSystem', 'dev'] as const) {
      const have = [...out.values()].some(
        (c) => c.scenario === scenario && c.defaults === defaults && c.signalNames === 'by-kind',
      );
      if (have) continue;
      // The shipped defaults host one agent; a scenario that needs several gets them.
      const must = (['one', 'several'] as const)
        .map((agents): MatrixCell => ({
          scenario,
          signalNames: 'by-kind',
          store: 'sqlite',
          slicePath: 'local',
          delivery: 'signal',
          defaults,
          limits: 'none',
          agents,
        }))
        .find(allowed);
      if (must) out.set(byName(must), must);
    }
  return [...out.values()];
}

const light = DIMENSIONS.scenario.filter((s) => !HEAVY.includes(s));

/**
 * Cells of `cells` that, together, show every value of every dimension at least once (greedy: the cell that adds the
 * most values not yet shown first; of those, one on a system already chosen, as each system costs a start; then
 * the given order).
 */
function eachValueOnce(cells: MatrixCell[]): MatrixCell[] {
  const key = (d: string, v: string) => `${d}=${v}`;
  const missing = new Set(cells.flatMap((c) => Object.entries(c).map(([d, v]) => key(d, v))));
  const chosen: MatrixCell[] = [];
  const systems = new Set<string>();
  while (missing.size > 0) {
    const gain = (c: MatrixCell) =>
      2 * Object.entries(c).filter(([d, v]) => missing.has(key(d, v))).length + (systems.has(systemKey(c)) ? 1 : 0);
    const best = cells.reduce((a, b) => (gain(b) > gain(a) ? b : a));
    systems.add(systemKey(best));
    chosen.push(best);
    for (const [d, v] of Object.entries(best)) missing.delete(key(d, v));
  }
  return chosen;
}

const lightPairs = () => allPairs({ ...DIMENSIONS, scenario: light }, allowed);

/**
 * `npm test`: every light scenario under the shipped defaults (`startLocalSystem` and `dev`, by-kind), and cells of
 * the pairwise set that show every value of every dimension at least once. The whole pairwise set is the soak tier's.
 */
export function defaultCells(): MatrixCell[] {
  return withMust(eachValueOnce(lightPairs()), light);
}

/**
 * `npm run test:soak`: the light scenarios pairwise (the cells `npm test` does not run), the heavy ones pairwise, each
 * plus the shipped defaults. With `full` (`GUARANTEE_MATRIX=full`), also the light ones' full product: ~1,190 cells,
 * hours on two cores, for a release.
 */
export function soakCells(full = false): MatrixCell[] {
  const inDefault = new Set(defaultCells().map(byName));
  return [
    ...lightPairs().filter((c) => !inDefault.has(byName(c))),
    ...withMust(allPairs({ ...DIMENSIONS, scenario: HEAVY }, allowed), HEAVY),
    ...(full ? fullProduct({ ...DIMENSIONS, scenario: light }, allowed) : []),
  ];
}

/** The test name: the scenario and its configuration values. */
export const cellName = (c: MatrixCell) =>
  `${c.scenario} · signals ${c.signalNames} · store ${c.store} · slice ${c.slicePath} · delivery ${c.delivery} · ${c.defaults}${c.limits === 'throttled' ? ' · limits throttled' : ''}${c.agents === 'several' ? ' · agents several' : ''}`;

/** Cells that share a running system (the same defaults, store, signal names, limits and agents), in a stable order. */
export const systemKey = (c: MatrixCell) =>
  `${c.defaults} · ${c.store} · ${c.signalNames}${c.limits === 'throttled' ? ' · limits' : ''}${c.agents === 'several' ? ' · agents' : ''}`;
