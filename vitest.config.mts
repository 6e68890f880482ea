import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * Two tiers run by `npm test` (the soak tier has its own config, vitest.soak.mts):
 * - unit: no Temporal server and no PostgreSQL (pure logic, loopback HTTP, the replay gate over recorded histories,
 *   the workflow bundle); its setup only bundles the workflows.
 * - system: a real dev server and PostgreSQL, started once by test/global-setup.ts.
 * `vitest run --project unit` runs one tier; a bare `vitest run` runs both.
 */

/** Under test/unit/ but need a server: PostgreSQL (the store contract) or a dev server of their own. */
const UNIT_NEEDING_SERVERS = ['store.test.ts', 'postgres-store.test.ts', 'devserver.test.ts'];
const UNIT = [
  ...readdirSync(new URL('./test/unit', import.meta.url))
    .filter((f) => f.endsWith('.test.ts') && !UNIT_NEEDING_SERVERS.includes(f))
    .map((f) => `test/unit/${f}`),
  'test/replay.test.ts',
  'test/ui-replay.test.ts',
  'test/events.test.ts',
  'test/events-security.test.ts',
  'test/rap/gateway-hardening.test.ts',
];
const NEVER = ['test/browser/**', 'test/cluster/**', 'test/soak/**', 'node_modules/**'];

export default defineConfig({
  test: {
    setupFiles: ['test/setup-runtime.ts'],
    // Temporal workers use native threads: separate processes keep them apart. Three at once on two cores: most
    // system tests wait on the server more than they compute (274 s against 320 s with two, every test passing).
    pool: 'forks',
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    // No test in these tiers may take a minute (heavier ones live in the soak tier); a hook may start a worker.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT,
          exclude: NEVER,
          globalSetup: ['test/global-setup-unit.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'system',
          include: ['test/**/*.test.ts'],
          exclude: [...NEVER, ...UNIT],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
