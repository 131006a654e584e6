import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // The machine has 2 cores; e2e tests start servers, so keep parallelism modest.
    maxWorkers: 2,
  },
});
