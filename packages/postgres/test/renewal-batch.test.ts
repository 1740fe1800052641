// Renewals that fall due together go out as one UPDATE: holding many locks costs a few statements per
// renewal interval, not one per lock. Statements are counted as the pool's checkouts (one each).
import type { Lock } from '@holdfast/core';
import { until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const postgres = await useBackend('postgres');

describe.skipIf(!postgres.url)(`postgres renewals (${postgres.label})`, { timeout: 30_000 }, () => {
  test('500 locks renewed every 400 ms for 2 s: far fewer statements than locks x renewals, and every lock still held', async () => {
    const pool = new pg.Pool({ connectionString: postgres.url!, max: 4 });
    pool.on('error', () => undefined);
    let statements = 0;
    pool.on('acquire', () => statements++);
    const provider = createPostgresProvider({ pool });
    try {
      const ttlMs = 1200;
      // One prefix for all 500 (a Date.now() per key could cross a millisecond and split them).
      const base = `batch/${process.pid}/${Date.now()}/`;
      const keys = Array.from({ length: 500 }, (_, i) => `${base}${i}`);
      // Taken 25 at a time: 500 grants queued at once on 4 connections could outlast their own 1.2 s lease.
      const locks: (Lock | null)[] = [];
      for (let i = 0; i < keys.length; i += 25) {
        locks.push(...(await Promise.all(keys.slice(i, i + 25).map((key) => provider.tryAcquire(key, { ttlMs })))));
      }
      expect(locks.every((lock) => lock !== null)).toBe(true);
      const before = statements;
      const started = Date.now();
      await until(() => Date.now() - started >= 2000, 3000, '2 s of renewals', { everyMs: 50 });
      const renewalStatements = statements - before;
      console.info(`[postgres] renewing 500 locks for 2 s took ${renewalStatements} statements`);
      // 500 locks x 5 renewal rounds would be 2500 statements one by one.
      expect(renewalStatements).toBeGreaterThan(0);
      expect(renewalStatements, `${renewalStatements} statements renewed 500 locks for 2 s`).toBeLessThan(150);
      const held = await provider.list({ prefix: base });
      expect(held).toHaveLength(500);
      expect(locks.every((lock) => !lock!.signal.aborted)).toBe(true);
      await Promise.all(locks.map((lock) => lock!.release()));
    } finally {
      await provider.close();
      await pool.end();
    }
  });
});
