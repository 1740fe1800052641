import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The teeth test spawns a nested vitest run; the server smoke tests start real servers.
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
