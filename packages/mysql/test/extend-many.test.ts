// Extensions of many plain locks in a few statements (extend-many.ts): two per 1,000 locks, each row
// owner-checked, the answer read back. Rows are written by hand, so that the batch meets every kind
// of row a renewal can find: held, lapsed, gone, taken over by another grant, asked twice.

import { type ExtendItem, extendId } from '@holdfast/core/backend';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe, expect, test } from 'vitest';
import { LockTable } from '../src/lock-table.js';
import { openPool } from '../src/pool.js';
import { SchemaGuard } from '../src/schema-guard.js';
import type { Run } from '../src/sql-runner.js';
import { SqlRunner } from '../src/sql-runner.js';
import { statements } from '../src/statements.js';
import { tableNames } from '../src/table-names.js';
import { TableSession } from '../src/table-session.js';

const server = await useBackend('mysql');
const run = `${process.pid}-${Date.now()}`;

describe.skipIf(!server.url)(`mysql extensions in batches (${server.label})`, { timeout: 60_000 }, () => {
  const names = tableNames(`batch_${process.pid}`);
  const { pool, sockets } = openPool(undefined, { uri: server.url!, connectTimeout: 3000 });
  const runner = new SqlRunner(pool, sockets);
  const session = new TableSession(runner, names, new SchemaGuard(runner, names, true));
  let sent = 0;
  // Counts the statements the table sends.
  const counting = (run: Run): Run =>
    ((sql, values) => {
      sent++;
      return run(sql, values);
    }) as Run;
  const counted = { run: (signal, work) => session.run(signal, (run) => work(counting(run))) } as TableSession;
  const table = new LockTable(counted, statements(names), names);
  const signal = new AbortController().signal;
  afterAll(() => runner.close(AbortSignal.timeout(5000)));

  /** Writes lock rows directly: [key, lock id, seconds left (negative: lapsed)]. */
  async function seed(rows: readonly (readonly [string, string, number])[]): Promise<void> {
    await session.run(signal, async (run) => {
      for (let i = 0; i < rows.length; i += 1000) {
        const chunk = rows.slice(i, i + 1000);
        await run(
          `INSERT INTO ${names.locks} (\`key\`, lock_id, owner, reason, token, acquired_at, expires_at) VALUES ${chunk.map(() => "(?, ?, 'seed', NULL, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL ? SECOND)").join(', ')}`,
          chunk.flatMap(([key, lockId, seconds]) => [Buffer.from(key), lockId, seconds]),
        );
      }
    });
  }

  /** Seconds left of each key's lease by the server's clock (lapsed rows too). */
  async function leases(keys: readonly string[]): Promise<Map<string, number>> {
    return session.run(signal, async (run) => {
      const rows = await run<Record<string, unknown>[]>(
        `SELECT \`key\`, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) / 1e6 AS left_s FROM ${names.locks} WHERE \`key\` IN (?)`,
        [keys.map((key) => Buffer.from(key))],
      );
      return new Map(rows.map((row) => [String(row['key']), Number(row['left_s'])]));
    });
  }

  test('2,500 held locks and four that are not, in 6 statements: each row owner-checked, only held ones extended, a double ask by the later one', async () => {
    const held = Array.from({ length: 2500 }, (_, i) => [`batch/${run}/held/${i} ✓`, `id-${i}`, 60] as const);
    const [lapsed, taken, gone, twice] = ['lapsed', 'taken', 'gone', 'twice'].map((what) => `batch/${run}/${what}`) as [
      string,
      string,
      string,
      string,
    ];
    await seed([...held, [lapsed, 'id-lapsed', -1], [taken, 'successor', 60], [twice, 'id-twice', 60]]);
    const items: ExtendItem[] = [
      ...held.map(([key, lockId]) => ({ key, lockId, ttlMs: 120_000 })),
      { key: lapsed, lockId: 'id-lapsed', ttlMs: 120_000 },
      { key: taken, lockId: 'stale', ttlMs: 120_000 },
      { key: gone, lockId: 'id-gone', ttlMs: 120_000 },
      { key: twice, lockId: 'id-twice', ttlMs: 30_000 },
      { key: twice, lockId: 'id-twice', ttlMs: 90_000 },
    ];
    sent = 0;
    const extended = await table.extendMany(items, signal);
    expect(sent, 'statements for 2,504 distinct asks').toBe(6);
    const expected = [...held.map(([key, lockId]) => extendId(key, lockId)), extendId(twice, 'id-twice')];
    expect([...extended.keys()].sort()).toEqual(expected.sort());
    const expiry = extended.get(extendId(held[0]![0], held[0]![1]))!.getTime() - Date.now();
    expect(expiry, 'the new expiry read back').toBeGreaterThan(110_000);
    expect(expiry).toBeLessThan(121_000);
    const left = await leases([held[0]![0], held[2499]![0], lapsed, taken, twice]);
    for (const key of [held[0]![0], held[2499]![0]]) expect(left.get(key), `${key}: extended`).toBeGreaterThan(110);
    expect(left.get(lapsed), 'a lapsed lock was revived').toBeLessThan(0);
    expect(left.get(taken), "a stale ask moved its successor's lease").toBeLessThan(61);
    expect(left.get(twice), 'a grant asked twice: the later ask wins').toBeGreaterThan(80);
    expect(left.get(twice)).toBeLessThan(91);
  });

  test('10,000 held locks: 20 statements, against 10,000 single UPDATEs', async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => [`many/${run}/${i}`, `id-${i}`, 60] as const);
    await seed(rows);
    const items = rows.map(([key, lockId]) => ({ key, lockId, ttlMs: 60_000 }));
    sent = 0;
    let started = performance.now();
    const extended = await table.extendMany(items, signal);
    const batchMs = performance.now() - started;
    expect(sent).toBe(20);
    expect(extended.size).toBe(10_000);
    sent = 0;
    started = performance.now();
    // What renewals cost without batching: one owner-checked UPDATE each (8 at a time).
    for (let i = 0; i < items.length; i += 8) {
      const answers = await Promise.all(items.slice(i, i + 8).map((item) => table.extend(item.key, item.lockId, item.ttlMs, signal)));
      expect(answers.every(Boolean)).toBe(true);
    }
    const singleMs = performance.now() - started;
    expect(sent).toBe(10_000);
    console.info(`[mysql] 10,000 extensions: ${batchMs.toFixed(0)} ms in 20 statements, ${singleMs.toFixed(0)} ms in 10,000`);
    expect(batchMs, 'the batch took longer than the statements one by one').toBeLessThan(singleMs);
  });
});
