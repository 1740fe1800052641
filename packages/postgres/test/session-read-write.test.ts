// Read-write locks in session mode, beyond the conformance suite: what only its design can break.
// Readers hold the key's advisory lock shared, writers and plain locks exclusive, each on a
// connection of its own, and the fence row records the grants; a record counts only while its
// server process holds the lock (session-records.ts), and a plain lock and a read-write lock of one
// key are told apart from the records, under the fence row's lock (session-grant-statement.ts).
import { ErrorCode } from '@holdfast/core';
import { codeOf, lostWithin, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { named } from './activity.js';
import { holdInChild } from './holder-child.js';
import { outcome, sessionModeFixture } from './session-fixture.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (): string => `session-rw/${run}/${++count}`;

describe.skipIf(!postgres.url)(`postgres session mode, read-write locks (${postgres.label})`, { timeout: 60_000 }, () => {
  const url = postgres.url!;
  const { sessionUrl, open, admin, adminReady, endConnectionsOf } = sessionModeFixture(url);

  test('a reader process killed with SIGKILL (TTL 30 s) frees the key at once: a waiting writer holds it within a second', async () => {
    const key = newKey();
    const reader = await holdInChild(sessionUrl, key, 'read');
    try {
      const rw = open().readWrite(key);
      const holders = await rw.holders();
      expect(holders.map((h) => [h.token, h.details?.['mode']])).toEqual([[reader.token, 'shared']]);
      const writing = rw.write({ waitMs: 20_000 });
      writing.catch(() => undefined);
      expect(await rw.tryWrite()).toBeNull();
      await reader.kill();
      const killedAt = performance.now();
      const writer = await within(writing, 5000, 'the waiting writer is granted');
      const ms = performance.now() - killedAt;
      console.info(`[postgres session] a SIGKILLed reader's key (TTL 30 s) granted to a waiting writer ${ms.toFixed(1)} ms after its exit`);
      expect(ms).toBeLessThan(1000);
      expect(writer.token).toBeGreaterThan(reader.token);
      expect((await rw.holders()).map((h) => [h.token, h.details?.['mode']])).toEqual([[writer.token, 'exclusive']]);
      await writer.release();
    } finally {
      await reader.kill();
    }
  });

  test("a dead holder's record neither blocks another use of the key nor shows among holders", async () => {
    const name = `rw-dead-${run}`;
    const [dying, b] = [open({ url: named(url, name) }), open()];
    const readKey = newKey();
    const plainKey = newKey();
    const reader = await dying.readWrite(readKey).tryRead({ ttlMs: 30_000 });
    const plain = await dying.tryAcquire(plainKey, { ttlMs: 30_000 });
    expect(reader && plain).toBeTruthy();
    await endConnectionsOf(name);
    await lostWithin(reader!, 1000, 'the reader whose connection ended is told');
    await lostWithin(plain!, 1000, 'the plain holder whose connection ended is told');
    // The fence rows still record the dead holders: they count for nothing.
    expect(await b.readWrite(readKey).holders()).toEqual([]);
    expect(await b.inspect(plainKey)).toBeNull();
    expect(await outcome(b.tryAcquire(readKey)), "a dead reader's record made the key a read-write lock").toBe('granted');
    expect(await outcome(b.readWrite(plainKey).tryWrite()), "a dead plain holder's record made the key a plain lock").toBe('granted');
    // And the other way round again, each grant replacing the records of the one before.
    expect(await outcome(b.readWrite(readKey).tryRead())).toBe('granted');
    expect(await outcome(b.tryAcquire(plainKey))).toBe('granted');
  });

  test('a connection reused for the next reader of the same key shows once among holders', async () => {
    const name = `rw-reuse-${run}`;
    const rw = open({ url: named(url, name) }).readWrite(newKey());
    const first = await rw.tryRead();
    await first!.release();
    // The released reader's connection is idle in the provider's pool and takes the next grant.
    const second = await rw.tryRead();
    expect((await rw.holders()).map((h) => h.token)).toEqual([second!.token]);
    await second!.release();
    expect(await rw.holders()).toEqual([]);
  });

  test('a reader whose answer never arrives (its call timed out while the grant waited for the fence row) is freed, never left holding', async () => {
    await adminReady;
    const key = newKey();
    const [late, b] = [open({ url, callTimeoutMs: 300 }), open()];
    await (await late.readWrite(key).tryRead())!.release();
    const tokenOf = async (): Promise<bigint> =>
      BigInt((await admin.query<{ token: string }>('SELECT token FROM holdfast_locks_fences WHERE key = $1', [key])).rows[0]!.token);
    const before = await tokenOf();
    // An administrator's transaction holds the key's fence row: the next grant waits for it.
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM holdfast_locks_fences WHERE key = $1 FOR UPDATE', [key]);
      const lost = await outcome(within(late.readWrite(key).tryRead(), 5000, 'the reader gives up at its call timeout'));
      expect(lost, 'a grant whose call timed out').not.toBe('granted');
      expect(lost).toBe(ErrorCode.Backend);
    } finally {
      // The waiting grant now runs to its end on the server, for a client that is gone.
      await blocker.query('COMMIT');
      await blocker.end();
    }
    // It did land (the counter rose), and is gone: its server process ended with its connection.
    await until(async () => (await tokenOf()) > before, 2000, 'the lost grant lands', { everyMs: 20 });
    await until(async () => (await b.readWrite(key).holders()).length === 0, 2000, 'the lost grant is freed', { everyMs: 50 });
    expect(await outcome(b.readWrite(key).tryWrite()), 'a writer after the lost reader was freed').toBe('granted');
  });

  test('forceRelease ends every reader and says so; the key is free on return', async () => {
    const [a, b, admin2] = [open(), open(), open()];
    const key = newKey();
    const readers = await Promise.all([a.readWrite(key).tryRead(), b.readWrite(key).tryRead()]);
    expect(readers.every((reader) => reader !== null)).toBe(true);
    expect(await admin2.forceRelease(key)).toBe(true);
    expect(await admin2.readWrite(key).holders()).toEqual([]);
    expect(await outcome(admin2.readWrite(key).tryWrite())).toBe('granted');
    await Promise.all(readers.map((reader) => lostWithin(reader!, 1000, 'a force-released reader is told')));
    expect(await admin2.forceRelease(key)).toBe(false);
  });

  test('a plain lock and a read-write lock of one key refuse each other with LockConflictError, held or racing for a fresh key', async () => {
    const [a, b] = [open(), open()];
    const key = newKey();
    const plain = await a.tryAcquire(key);
    expect(plain).not.toBeNull();
    expect(await outcome(b.readWrite(key).tryRead())).toBe(ErrorCode.Conflict);
    expect(await outcome(b.readWrite(key).tryWrite())).toBe(ErrorCode.Conflict);
    // A waiting grant is refused at once too: it does not wait for the key to be free.
    expect(await outcome(within(b.readWrite(key).read({ waitMs: 20_000 }), 2000, 'a waiting reader is refused'))).toBe(ErrorCode.Conflict);
    await plain!.release();
    const reader = await a.readWrite(key).tryRead();
    expect(reader).not.toBeNull();
    expect(await outcome(b.tryAcquire(key))).toBe(ErrorCode.Conflict);
    expect(await outcome(within(b.acquire(key, { waitMs: 20_000 }), 2000, 'a waiting plain lock is refused'))).toBe(ErrorCode.Conflict);
    await reader!.release();

    // Two first grants of a fresh key, one of each use, at once: one is granted, the other refused
    // with a conflict (never a plain busy, never both granted).
    for (let round = 0; round < 30; round++) {
      const fresh = newKey();
      const rw = b.readWrite(fresh);
      const attempts = [a.tryAcquire(fresh), round % 2 === 0 ? rw.tryRead() : rw.tryWrite()];
      const settled = await Promise.allSettled(attempts);
      const answers = settled.map((s) => (s.status === 'fulfilled' ? (s.value === null ? null : 'granted') : codeOf(s.reason)));
      await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value?.release() : undefined)));
      expect(answers.sort(), `round ${round}`).toEqual([ErrorCode.Conflict, 'granted'].sort());
    }
  });
});
