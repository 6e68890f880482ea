import { defineConfig } from 'vitest/config';

// The soak tier (`npm run test:soak`): the guarantee matrix's heavy cells and its full product, and the replays of
// every recorded history with the UI texts changed and with tracing (`npm test` replays a sample: test/recorded.ts).
export default defineConfig({
  test: {
    include: ['test/soak/**/*.soak.test.ts', 'test/ui-replay.test.ts', 'test/tracing.test.ts'],
    env: { RECORDED_HISTORIES: 'all' },
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-runtime.ts'],
    // Temporal workers use native threads: separate processes keep them apart.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 600_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
