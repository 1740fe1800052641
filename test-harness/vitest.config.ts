import { defineConfig } from 'vitest/config';

export default defineConfig({
  // src/package-dir.cts (CommonJS, shared by the ESM and CommonJS builds) is TypeScript too.
  esbuild: { include: /\.(c|m)?tsx?$/ },
  test: {
    include: ['test/**/*.test.ts'],
    // The teeth test spawns a nested vitest run; the server smoke tests start real servers.
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
