/**
 * The guarantees over the configuration matrix (test/guarantees/matrix.ts), default tier: every light scenario over
 * pairwise cells of every dimension, plus each scenario under the shipped defaults (`by-kind` with `startLocalSystem`
 * and with `dev`). Heavy cells and the full product run in test/soak/guarantees.soak.test.ts.
 */
import { defaultCells } from './matrix';
import { runCells } from './run-cells';

const only = process.env.GUARANTEE_CELLS;
runCells(defaultCells().filter((c) => !only || Object.values(c).join(' · ').includes(only)));
