// An acquire that gives up while its grant statement runs cuts that statement's connection, but the
// server finishes the statement anyway: PostgreSQL notices a client is gone only when it answers.
// The undo core sends must land after that statement, or the grant it missed holds the key for a
// caller who is gone, for a whole lease. Here the grant is made to wait on the key's fence row, held
// by a transaction of the test's own, until after the acquire was aborted and its undo was sent.
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const server = await useBackend('postgres');
/** Far longer than the test: a grant the undo missed would still hold the key at its end. */
const LONG_TTL_MS = 60_000;
const TABLE = 'holdfast_abandoned';

describe.skipIf(!server.url)(`postgres: an abandoned grant statement (${server.label})`, { timeout: 30_000 }, () => {
  const url = server.url!;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(() => Promise.allSettled(closers.map((close) => close())));

  for (const how of ['tryAcquire', 'acquire'] as const) {
    test(`${how} aborted while its grant waits on a row lock: the grant that commits later is undone, not left for its lease`, async () => {
      await abandonedGrant(how, 'after the answer');
    });

    test(`${how} aborted while its grant waits on a row lock that goes at once: it answers after the grant was undone`, async () => {
      await abandonedGrant(how, 'at the abort');
    });
  }

  /** The blocker commits (letting the held-up grant go on) at the abort, or only once the caller had its answer. */
  async function abandonedGrant(how: 'tryAcquire' | 'acquire', commit: 'at the abort' | 'after the answer'): Promise<void> {
    const locks: LockProvider = createPostgresProvider({ url, table: TABLE });
    // The observer is apart: inside the blocker's transaction, pg_stat_activity is a snapshot.
    const [blocker, observer] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
    closers.push(
      () => locks.close(),
      () => blocker.end(),
      () => observer.end(),
    );
    await Promise.all([blocker.connect(), observer.connect()]);
    const key = `abandoned-${how}/${process.pid}/${Date.now()}`;
    // The fence row must exist to be locked: one grant and release makes it.
    await (await locks.tryAcquire(key))!.release();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${TABLE}_fences WHERE key = $1 FOR UPDATE`, [key]);

    const controller = new AbortController();
    const attempt =
      how === 'tryAcquire'
        ? locks.tryAcquire(key, { ttlMs: LONG_TTL_MS, signal: controller.signal })
        : locks.acquire(key, { ttlMs: LONG_TTL_MS, waitMs: 10_000, signal: controller.signal });
    const gaveUp = rejection(attempt);
    await until(() => waitingOnTheRowLock(observer, TABLE), 5000, 'the grant statement waits on the fence row');
    const committed = commit === 'at the abort' ? blocker.query('COMMIT') : undefined;
    controller.abort(new Error('the caller moved on'));
    const error = await within(gaveUp, 3000, `the aborted ${how} answers`);
    expect(codeOf(error), `the aborted ${how} did not fail with LockAbortedError`).toBe(ErrorCode.Aborted);
    if (committed) {
      await committed;
      expect(await locks.inspect(key), `the aborted ${how} answered before the grant it was cut off from was undone`).toBeNull();
    }

    // The held-up grant goes on now at the latest: it commits after the abort and after any undo sent at it.
    if (!committed) await blocker.query('COMMIT');
    await until(
      async () => (await locks.inspect(key)) === null,
      3000,
      `the key is free: the grant of the aborted ${how} committed after its undo and holds the key for its ${LONG_TTL_MS} ms lease`,
      { everyMs: 50 },
    );
    const next = await locks.tryAcquire(key);
    expect(next, 'the key is not free for the next caller').not.toBeNull();
    await next!.release();
  }
});

/** Whether a statement on the fence table waits for a lock (the grant, stuck behind the test's row lock). */
async function waitingOnTheRowLock(observer: pg.Client, table: string): Promise<boolean> {
  const { rows } = await observer.query(
    `SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE $1`,
    [`%${table}_fences%`],
  );
  return rows.length > 0;
}
