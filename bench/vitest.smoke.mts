import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['bench/smoke.test.ts'], testTimeout: 600_000, pool: 'forks' },
});
