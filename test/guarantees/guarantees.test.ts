/**
 * The guarantees over the configuration matrix (test/guarantees/matrix.ts), default tier: every light scenario under
 * the shipped defaults (`by-kind` with `startLocalSystem` and with `dev`), and cells that show every value of every
 * dimension at least once. The rest of the pairwise set, the heavy cells and the full product run in
 * test/soak/guarantees.soak.test.ts.
 */
import { defaultCells } from './matrix';
import { runCells } from './run-cells';

const only = process.env.GUARANTEE_CELLS;
runCells(defaultCells().filter((c) => !only || Object.values(c).join(' · ').includes(only)));
