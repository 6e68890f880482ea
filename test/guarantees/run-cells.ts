/**
 * Runs matrix cells as vitest tests: one `describe` per running system (cells that share defaults, store and signal
 * names share it), one test per cell, named by its scenario and configuration values so a failure names both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELPER, PLANNER } from './agents';
import { cellName, type MatrixCell, systemKey } from './matrix';
import { SCENARIOS } from './scenarios';
import { startSystem, type GuaranteeSystem, THROTTLE_MS } from './systems';

export function runCells(cells: readonly MatrixCell[], timeoutMs = 60_000): void {
  const groups = new Map<string, MatrixCell[]>();
  for (const c of cells) groups.set(systemKey(c), [...(groups.get(systemKey(c)) ?? []), c]);
  for (const [key, group] of groups) {
    describe(`system ${key}`, () => {
      let sys: GuaranteeSystem | undefined;
      beforeAll(async () => {
        sys = await startSystem(group[0]!);
      }, 120_000);
      afterAll(async () => sys?.shutdown(), 60_000);
      for (const cell of group) {
        const scenario = SCENARIOS[cell.scenario];
        if (!scenario) throw new Error(`no scenario '${cell.scenario}'`);
        it(
          cellName(cell),
          async () => {
            const t0 = Date.now();
            const calledBefore = sys!.modelCalls().length;
            const sentBefore = sys!.modelSystems().length;
            await sys!.throttle();
            await scenario(sys!, cell);
            if (cell.agents === 'several') {
              // Every request of the cell was a named agent's: the planner's, or the helper's where a scenario asks.
              const systems = sys!.modelSystems().slice(sentBefore);
              const named = cell.scenario === 'child of another agent, moved' ? [PLANNER, HELPER] : [PLANNER];
              expect(systems.length, 'the scenario called the model').toBeGreaterThan(0);
              for (const s of systems)
                expect(
                  named.some((n) => s.startsWith(n)),
                  `a request of agent ${named.join(' or ')}: ${s.slice(0, 80)}`,
                ).toBe(true);
            }
            if (cell.limits === 'throttled') {
              // The key was closed: no model call in the meantime, and the scenario's calls came after.
              const calls = sys!.modelCalls().slice(calledBefore);
              expect(calls.length, 'the scenario called the model').toBeGreaterThan(0);
              expect(calls[0]! - t0, 'the first call waited for the closed key').toBeGreaterThanOrEqual(
                THROTTLE_MS - 100,
              );
            }
            console.log(`✓ ${cellName(cell)} (${Date.now() - t0} ms)`);
          },
          timeoutMs,
        );
      }
    });
  }
}
