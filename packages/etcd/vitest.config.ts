import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The cluster, fault and interop files start their own etcd members: run files one at a time.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
