import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // The package's own name, as a plugin outside the repo imports it (docs examples): the sources, as in tsconfig's paths.
    alias: [
      { find: /^switchyard-gateway(\/sdk)?$/, replacement: root('./sdk/index.ts') },
      { find: /^switchyard-gateway\/plugins\/(.*)\.js$/, replacement: root('./plugins/$1.ts') },
      { find: /^switchyard-gateway\/testing$/, replacement: root('./server/testing/index.ts') },
    ],
  },
  test: {
    // The example packages' own tests run here too, on the sources (the alias above), so the kit they use cannot drift.
    include: ['test/**/*.test.ts', 'examples/*/test/**/*.test.js'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // The machine has 2 cores; e2e tests start servers, so keep parallelism modest.
    maxWorkers: 2,
  },
});
