/**
 * The guarantee matrix's soak tier (`npx vitest run -c vitest.soak.mts`): the light scenarios' pairwise cells that
 * `npm test` leaves out, and the heavy scenarios (16 MiB results, the 3,000-input flood, a worker killed mid-slice)
 * pairwise plus the shipped defaults; with GUARANTEE_MATRIX=full also
 * the light scenarios' full product (hours). GUARANTEE_CELLS=<text> runs only the cells whose values contain it.
 */
import { soakCells } from '../guarantees/matrix';
import { runCells } from '../guarantees/run-cells';

const only = process.env.GUARANTEE_CELLS;
runCells(
  soakCells(process.env.GUARANTEE_MATRIX === 'full').filter(
    (c) => !only || Object.values(c).join(' · ').includes(only),
  ),
  600_000,
);
