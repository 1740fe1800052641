import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // FerretDB's SQLite serializes every write: with vitest's default of five concurrent cases in
    // flight, the pings of a 2 s lease (every 250 ms) queued behind the other cases' writes on a
    // slower machine and the expiry cases failed (5 of 100, also on the commit before this change).
    maxConcurrency: 2,
  },
});
