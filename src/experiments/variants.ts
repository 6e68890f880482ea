/** The variants of an experiment: every combination of its factors' levels (issue 29 §2). */
import type { ExperimentFile } from './file';

/** One combination of factor levels. */
export interface Variant {
  /** Event labels in arrival order (the first `count` of them are delivered). */
  order: string[];
  timing: string;
  count: number;
  mode: 'associative' | 'threaded';
}

/** Permutations of `xs` in lexicographic order of positions, at most `cap`. */
export function permutations<T>(xs: readonly T[], cap: number): T[][] {
  const out: T[][] = [];
  const walk = (prefix: T[], rest: T[]) => {
    if (out.length >= cap) return;
    if (rest.length === 0) {
      out.push(prefix);
      return;
    }
    rest.forEach((x, i) => walk([...prefix, x], [...rest.slice(0, i), ...rest.slice(i + 1)]));
  };
  walk([], [...xs]);
  return out;
}

/** A small seeded generator (mulberry32): the same seed, the same sample, on every machine. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` distinct random orders of `xs` (fewer when there are not that many), by a seeded shuffle. */
export function sampledOrders<T>(xs: readonly T[], n: number, seed: number): T[][] {
  const random = seeded(seed);
  const seen = new Set<string>();
  const out: T[][] = [];
  for (let tries = 0; out.length < n && tries < n * 50; tries++) {
    const p = [...xs];
    for (let i = p.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [p[i], p[j]] = [p[j]!, p[i]!];
    }
    const key = JSON.stringify(p);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(p);
    }
  }
  return out;
}

/** Every variant: orders × timings × counts × modes, in that nesting. */
export function variantsOf(exp: ExperimentFile): Variant[] {
  const labels = exp.events.items.map((e) => e.label);
  const o = exp.factors.order;
  const orders = !o
    ? [labels]
    : 'permutations' in o
      ? permutations(labels, o.permutations)
      : sampledOrders(labels, o.sample, o.seed ?? 1);
  const firstSlot = exp.timeline.flatMap((s) => ('slot' in s ? [s.slot] : []))[0]!;
  const timings = exp.factors.timing ?? [firstSlot];
  const counts = exp.factors.count ?? [labels.length];
  const modes = exp.factors.mode ?? ['associative'];
  const out: Variant[] = [];
  for (const order of orders)
    for (const timing of timings)
      for (const count of counts) for (const mode of modes) out.push({ order, timing, count, mode });
  return out;
}
