import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The tests' Nest classes use legacy decorators. esbuild cannot emit decorator metadata, so every
  // injection in them names its token with @Inject, as the package itself does.
  esbuild: { tsconfigRaw: { compilerOptions: { experimentalDecorators: true } } },
  test: {
    // Each file starts Nest applications and a Redis server of its own: one file at a time.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
