// The app's own mysql2 pool: used for one operation at a time, never held while a lock is held,
// left open on close(); whatever isolation level its sessions use; refused loudly without autocommit.
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { afterAll, describe, expect, test } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

const server = await useBackend('mysql');
const run = `${process.pid}-${Date.now()}`;

/** Connections a callback pool has lent out right now (mysql2 keeps no public count). */
function borrowed(pool: mysql.Pool): number {
  const internals = pool as unknown as { _allConnections: { length: number }; _freeConnections: { length: number } };
  return internals._allConnections.length - internals._freeConnections.length;
}

describe.skipIf(!server.url)(`mysql with the app's pool (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(() => Promise.allSettled(closers.map((close) => close())));
  const provider = (options: Parameters<typeof createMysqlProvider>[0]): LockProvider => {
    const created = createMysqlProvider(options);
    closers.unshift(() => created.close());
    return created;
  };

  test('locks through a pool of one connection; none stays borrowed while a lock is held; close() leaves the pool open', async () => {
    const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
    closers.push(() => pool.promise().end());
    const [a, b] = [provider({ pool }), provider({ pool })];
    const key = `pool/${run}/one`;
    const lock = await a.tryAcquire(key);
    expect(lock).not.toBeNull();
    expect(borrowed(pool), 'connections borrowed while the lock is held').toBe(0);
    // With one connection, the second provider only gets it because the first gave it back.
    expect(await within(b.tryAcquire(key), 5000, 'a busy answer through the same one-connection pool')).toBeNull();
    await lock!.release();
    const second = await b.tryAcquire(key);
    expect(second!.token).toBeGreaterThan(lock!.token);
    await second!.release();
    await Promise.all([a.close(), b.close()]);
    const [rows] = await pool.promise().query('SELECT 1 AS one');
    expect(rows).toEqual([{ one: 1 }]);
  });

  test('sessions in READ COMMITTED (a mysql2/promise pool): racing grants still exclude and tokens still rise', async () => {
    const pool = mysqlPromise.createPool({ uri: url, connectionLimit: 8 });
    closers.push(() => pool.end());
    pool.pool.on('connection', (connection) => connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'));
    const providers = [provider({ pool }), provider({ pool }), provider({ pool }), provider({ pool })];
    const key = `pool/${run}/read-committed`;
    let last = 0n;
    let won = 0;
    for (let round = 0; round < 40; round++) {
      const answers = await within(Promise.all(providers.flatMap((p) => [p.tryAcquire(key), p.tryAcquire(key)])), 5000, `round ${round}`);
      const granted = answers.filter((lock): lock is Lock => lock !== null);
      expect(granted.length, `round ${round}: racing grants`).toBeLessThanOrEqual(1);
      for (const lock of granted) {
        expect(lock.token, `round ${round}: token`).toBeGreaterThan(last);
        last = lock.token;
        won++;
        await lock.release();
      }
    }
    expect(won, 'races on a free key won by anyone').toBeGreaterThanOrEqual(20);
    const [[isolation]] = (await pool.query('SELECT @@session.tx_isolation AS level')) as unknown as [[{ level: string }]];
    expect(isolation.level).toBe('READ-COMMITTED');
  });

  test('a pool whose connections have autocommit off is refused with a BackendError, and leaves no lock behind', async () => {
    const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
    closers.push(() => pool.promise().end());
    pool.on('connection', (connection) => connection.query('SET autocommit = 0'));
    const key = `pool/${run}/no-autocommit`;
    const error = await rejection(within(provider({ pool }).tryAcquire(key), 5000, 'tryAcquire through a pool without autocommit'));
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(String(error)).toMatch(/autocommit/);
    // The connection was cut, so the server rolled its statements back: the key is free at once.
    const other = await within(provider({ url }).tryAcquire(key), 5000, 'tryAcquire through an ordinary provider');
    expect(other).not.toBeNull();
    await other!.release();
  });
});
