import { defineConfig } from 'vitest/config';

// The browser check runs on its own (`npm run test:browser`): it needs Debian's chromium (`apt-get install chromium`).
export default defineConfig({
  test: { include: ['test/browser/**/*.test.ts'], testTimeout: 180_000, hookTimeout: 180_000, pool: 'forks' },
});
