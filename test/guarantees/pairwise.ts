/**
 * A deterministic all-pairs generator with constraints: every allowed pair of values of two dimensions appears in at
 * least one cell, and no cell breaks `allowed`. Greedy (each new cell takes, dimension by dimension, the value that
 * covers the most pairs still uncovered), so the same table always gives the same cells in the same order.
 */
export type Cell<D extends Record<string, readonly string[]>> = { [K in keyof D]: D[K][number] };

export function allPairs<D extends Record<string, readonly string[]>>(
  dims: D,
  allowed: (partial: Partial<Cell<D>>) => boolean,
): Cell<D>[] {
  const keys = Object.keys(dims) as (keyof D & string)[];
  const pairKey = (a: string, av: string, b: string, bv: string) => `${a}=${av}|${b}=${bv}`;
  const uncovered = new Set<string>();
  for (let i = 0; i < keys.length; i++)
    for (let j = i + 1; j < keys.length; j++)
      for (const av of dims[keys[i]!]!)
        for (const bv of dims[keys[j]!]!)
          if (allowed({ [keys[i]!]: av, [keys[j]!]: bv } as Partial<Cell<D>>))
            uncovered.add(pairKey(keys[i]!, av, keys[j]!, bv));
  const covers = (cell: Partial<Cell<D>>) => {
    const set = Object.entries(cell) as [string, string][];
    let n = 0;
    for (let i = 0; i < set.length; i++)
      for (let j = i + 1; j < set.length; j++) {
        const [[a, av], [b, bv]] =
          keys.indexOf(set[i]![0]) < keys.indexOf(set[j]![0]) ? [set[i]!, set[j]!] : [set[j]!, set[i]!];
        if (uncovered.has(pairKey(a, av, b, bv))) n++;
      }
    return n;
  };
  const cells: Cell<D>[] = [];
  while (uncovered.size > 0) {
    // Seed with the first uncovered pair, so every round makes progress.
    const [first] = uncovered;
    const [[a, av], [b, bv]] = first!.split('|').map((p) => p.split('=') as [string, string]) as [
      [string, string],
      [string, string],
    ];
    const cell = { [a!]: av, [b!]: bv } as Partial<Cell<D>>;
    for (const k of keys) {
      if (k in cell) continue;
      let best: string | undefined;
      let bestN = -1;
      for (const v of dims[k]!) {
        const trial = { ...cell, [k]: v };
        if (!allowed(trial)) continue;
        const n = covers(trial);
        if (n > bestN) [best, bestN] = [v, n];
      }
      if (best === undefined) throw new Error(`no allowed value of ${k} completes ${JSON.stringify(cell)}`);
      (cell as Record<string, string>)[k] = best;
    }
    const full = cell as Cell<D>;
    for (let i = 0; i < keys.length; i++)
      for (let j = i + 1; j < keys.length; j++)
        uncovered.delete(pairKey(keys[i]!, full[keys[i]!], keys[j]!, full[keys[j]!]));
    cells.push(full);
  }
  return cells;
}

/** Every allowed combination (the soak tier's full product). */
export function fullProduct<D extends Record<string, readonly string[]>>(
  dims: D,
  allowed: (partial: Partial<Cell<D>>) => boolean,
): Cell<D>[] {
  let partials: Partial<Cell<D>>[] = [{}];
  for (const k of Object.keys(dims) as (keyof D & string)[])
    partials = partials.flatMap((p) => dims[k]!.map((v) => ({ ...p, [k]: v }) as Partial<Cell<D>>)).filter(allowed);
  return partials as Cell<D>[];
}
