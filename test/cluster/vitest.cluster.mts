import { defineConfig } from 'vitest/config';

// The suite against a local multi-shard Temporal cluster on PostgreSQL (`npm run test:cluster`), apart from `npm test`:
// it builds the server from Go on first use (many minutes) and needs Debian's `postgresql` package.
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    setupFiles: ['test/setup-runtime.ts'],
    // Temporal workers use native threads: separate processes keep them apart.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 300_000,
    // The first run builds the server inside the global setup.
    hookTimeout: 60 * 60_000,
    reporters: ['default'],
  },
});
