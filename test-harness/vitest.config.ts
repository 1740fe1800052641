import { defineConfig } from 'vitest/config';

export default defineConfig({
  // src/package-dir.cts (CommonJS, shared by the ESM and CommonJS builds) is TypeScript too.
  esbuild: { include: /\.(c|m)?tsx?$/ },
  test: {
    include: ['test/**/*.test.ts'],
    // The teeth test spawns a nested vitest run; the server smoke tests start real servers.
    testTimeout: 120_000,
    // One file at a time: the nemesis files each start 3-member clusters (JVMs, etcd, Sentinels) in
    // namespaces, and side by side on 2 cores a ZooKeeper ensemble never elected a leader in CI. The
    // longest file (the engines' nemesis) sets the pace either way: serial costs about nothing.
    fileParallelism: false,
    hookTimeout: 180_000,
  },
});
