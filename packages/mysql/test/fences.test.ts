// The fence counter decides tokens: a grant needs the newest reservation, so tokens keep rising when
// lock rows are deleted behind the adapter's back, even for a reservation made before the deletion.
import type { LockProvider } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import mysql, { type ResultSetHeader } from 'mysql2/promise';
import { afterAll, describe, expect, test } from 'vitest';
import { createMysqlProvider, tableNames } from '../src/index.js';
import { statements } from '../src/statements.js';

const server = await useBackend('mysql');
const run = `${process.pid}-${Date.now()}`;

describe.skipIf(!server.url)(`mysql fence counters (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const providers: LockProvider[] = [];
  const open = (table: string): LockProvider => {
    const provider = createMysqlProvider({ url, table });
    providers.push(provider);
    return provider;
  };
  afterAll(() => Promise.all(providers.map((provider) => provider.close())));

  test('deleting every lock row does not reset tokens: the next grant is above the last', async () => {
    const table = `fences_${process.pid}`;
    const locks = open(table);
    const key = `fences/${run}/deleted`;
    const first = await locks.tryAcquire(key);
    await first!.release();
    const second = await locks.tryAcquire(key, { ttlMs: 60_000 });
    const db = await mysql.createConnection(url);
    try {
      // An administrator tidies up, held locks included.
      await db.query(`DELETE FROM ${tableNames(table).locks}`);
    } finally {
      await db.end();
    }
    const third = await locks.tryAcquire(key);
    expect(third, 'a key whose lock row was deleted is free').not.toBeNull();
    expect(third!.token).toBeGreaterThan(second!.token);
    expect(second!.token).toBeGreaterThan(first!.token);
    await third!.release();
  });

  test('a reservation made before a newer grant can never take the key, even after its row was deleted', async () => {
    const table = `stale_${process.pid}`;
    const names = tableNames(table);
    const sql = statements(names);
    const locks = open(table);
    const key = `fences/${run}/stale`;
    // Creates the tables, and the key's fence row.
    await (await locks.tryAcquire(key))!.release();
    const db = await mysql.createConnection(url);
    try {
      const bytes = Buffer.from(key);
      // A grant stalled between its reserve and its take (as a paused client would be)...
      const stale = (await db.query<ResultSetHeader>(sql.reserve, [bytes]))[0].insertId;
      // ...meanwhile the key is granted (with a newer reservation) and its row deleted by hand.
      const newer = await locks.tryAcquire(key, { ttlMs: 60_000 });
      expect(BigInt(newer!.token)).toBeGreaterThan(BigInt(stale));
      await db.query(`DELETE FROM ${names.locks}`);
      // The stalled take arrives: it must write nothing, or the key would go out with an older token.
      const take = [
        `stale-${run}`,
        Buffer.from('stalled'),
        null,
        60_000_000,
        bytes,
        stale,
        `stale-${run}`,
        Buffer.from('stalled'),
        null,
        stale,
        60_000_000,
      ];
      const [taken] = await db.query<ResultSetHeader>(sql.take, take);
      expect(taken.affectedRows, 'a stale reservation took the key').toBe(0);
      const next = await locks.tryAcquire(key);
      expect(next!.token).toBeGreaterThan(newer!.token);
      await next!.release();
    } finally {
      await db.end();
    }
  });
});
