// Read-write locks on PostgreSQL (lease mode) beyond the conformance cases: races that only the one
// row per key can settle (readers against writers, against plain locks and semaphores), a grant
// statement that reaches the server twice, forced releases told at once, and the row's shape.
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, settle, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider, tableNames } from '../src/index.js';
import { modeStatements, READ_WRITE_LIMIT } from '../src/mode-statements.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}-${Date.now()}`;
let count = 0;
const newKey = (what: string): string => `rw/${run}/${what}/${++count}`;
/** Bound for a handful of single statements on a loaded machine. */
const ANSWER_MS = 10_000;

describe.skipIf(!postgres.url)(`postgres read-write locks (${postgres.label})`, { timeout: 60_000 }, () => {
  const providers: LockProvider[] = [];
  const open = (): LockProvider => {
    const provider = createPostgresProvider({ url: postgres.url! });
    providers.push(provider);
    return provider;
  };
  const [a, b, c, d] = [open(), open(), open(), open()];
  afterAll(() => Promise.allSettled(providers.map((provider) => provider.close())));

  /** Every lock taken by the settled attempts; the rest must be busy (null) or a LockConflictError. */
  const grantsOf = (outcomes: readonly { value?: Lock | null; error?: unknown }[]): Lock[] => {
    for (const outcome of outcomes) if (outcome.error !== undefined) expect(codeOf(outcome.error)).toBe(ErrorCode.Conflict);
    return outcomes.flatMap((outcome) => (outcome.value ? [outcome.value] : []));
  };

  test('two writers and two readers raced on a free key from four providers, 40 rounds: a writer alone or readers only, as the row says', async () => {
    const seen = { writer: 0, readers: 0, bothReaders: 0 };
    for (let round = 0; round < 40; round++) {
      const key = newKey('race');
      const attempts = [a.readWrite(key).tryWrite(), b.readWrite(key).tryRead(), c.readWrite(key).tryRead(), d.readWrite(key).tryWrite()];
      const grants = grantsOf(await within(Promise.all(attempts.map(settle)), ANSWER_MS, 'four attempts answer'));
      const holders = await a.readWrite(key).holders();
      const modes = holders.map((holder) => holder.details?.['mode']);
      expect(grants.length, `round ${round}: nothing was granted on a free key`).toBeGreaterThan(0);
      expect(
        holders.map((h) => h.token),
        `round ${round}: grants the row does not show`,
      ).toEqual(grants.map((lock) => lock.token).sort((x, y) => (x < y ? -1 : 1)));
      if (modes.includes('exclusive')) expect(modes, `round ${round}: a writer beside others`).toEqual(['exclusive']);
      else expect(modes.every((mode) => mode === 'shared')).toBe(true);
      seen[modes.includes('exclusive') ? 'writer' : 'readers']++;
      if (modes.length === 2 && !modes.includes('exclusive')) seen.bothReaders++;
      await Promise.all(grants.map((lock) => lock.release()));
    }
    console.info(`[postgres] read-write races: ${seen.writer} won by a writer, ${seen.readers} by readers (${seen.bothReaders} by both)`);
    expect(seen.writer + seen.readers).toBe(40);
  });

  test('a plain lock, a semaphore and a reader raced on a free key, 30 rounds: one kind holds it, the others are busy or a conflict', async () => {
    for (let round = 0; round < 30; round++) {
      const key = newKey('kinds');
      const attempts = [a, b, c].flatMap((provider) => [
        provider.tryAcquire(key),
        provider.semaphore(key, 2).tryAcquire(),
        provider.readWrite(key).tryRead(),
      ]);
      const grants = grantsOf(await within(Promise.all(attempts.map(settle)), ANSWER_MS, 'nine attempts answer'));
      const kinds = [
        (await d.inspect(key)) === null ? 0 : 1,
        (await d.semaphore(key, 2).holders()).length,
        (await d.readWrite(key).holders()).length,
      ];
      expect(kinds.filter((n) => n > 0).length, `round ${round}: held as ${kinds.join('/')} (lock/slots/readers)`).toBe(1);
      expect(grants.length, `round ${round}: grants the backend does not show`).toBe(kinds[0]! + kinds[1]! + kinds[2]!);
      await Promise.all(grants.map((lock) => lock.release()));
    }
  });

  test('a grant statement that reaches the server twice with one lock id grants once, and a writer is busy beside the reader', async () => {
    const key = newKey('twice');
    const client = new pg.Client({ connectionString: postgres.url!, connectionTimeoutMillis: 3000 });
    await client.connect();
    try {
      // Through the provider first, so that the tables exist.
      await (await a.readWrite(newKey('warm-up')).tryRead())!.release();
      const sql = modeStatements(tableNames());
      const send = (lockId: string, mode: string) =>
        client.query<{ granted: boolean; token: string | null }>(sql.grant, [key, lockId, 'tester', null, 30_000, mode]);
      const first = (await send('reader-1', 'shared')).rows[0]!;
      const again = (await send('reader-1', 'shared')).rows[0]!;
      const writer = (await send('writer-1', 'exclusive')).rows[0]!;
      expect(first.granted, 'a reader on a free key').toBe(true);
      expect(again.granted, 'the same statement granted twice').toBe(false);
      expect(writer.granted, 'a writer beside a reader').toBe(false);
      const { rows } = await client.query<{ slot_limit: number; slots: { lock_id: string; mode: string }[] }>(
        `SELECT slot_limit, slots FROM holdfast_locks WHERE key = $1`,
        [key],
      );
      expect(rows[0]!.slot_limit).toBe(READ_WRITE_LIMIT);
      expect(rows[0]!.slots.map((slot) => [slot.lock_id, slot.mode])).toEqual([['reader-1', 'shared']]);
      expect(await b.readWrite(key).tryWrite(), 'a writer through a provider beside the reader').toBeNull();
      expect(await b.forceRelease(key)).toBe(true);
    } finally {
      await client.end();
    }
  });

  test('a forced release is told at once to readers in other providers (TTL 30 s), and the next writer gets a higher token', async () => {
    const key = newKey('forced');
    const readers = [await a.readWrite(key).tryRead({ ttlMs: 30_000 }), await b.readWrite(key).tryRead({ ttlMs: 30_000 })];
    expect(readers.every((lock) => lock !== null)).toBe(true);
    expect(await d.forceRelease(key)).toBe(true);
    const writer = await c.readWrite(key).tryWrite({ ttlMs: 30_000 });
    await Promise.all(readers.map((lock) => lostWithin(lock!, 2000)));
    expect(readers.map((lock) => codeOf(lock!.signal.reason))).toEqual([ErrorCode.Lost, ErrorCode.Lost]);
    expect(writer, 'the key after a forced release').not.toBeNull();
    expect(writer!.token).toBeGreaterThan(readers[1]!.token);
    expect(writer!.signal.aborted, 'the forced release was told to a writer granted after it').toBe(false);
    expect(await d.inspect(key), 'inspect() shows plain locks only').toBeNull();
    await writer!.release();
  });

  test('readers renewed past their TTL stay, a lapsed reader makes room for a writer', async () => {
    const key = newKey('renewed');
    const kept = await a.readWrite(key).tryRead({ ttlMs: 300 });
    const lapsing = await b.readWrite(key).tryRead({ ttlMs: 300, autoRenew: false });
    await lostWithin(lapsing!, 3000);
    // Its holder is told a little before the server's expiry (core's safety margin): wait for the server.
    await until(async () => (await c.readWrite(key).holders()).length === 1, 3000, 'the lapsed reader is gone from the row');
    expect((await c.readWrite(key).holders()).map((h) => h.token)).toEqual([kept!.token]);
    expect(await c.readWrite(key).tryWrite(), 'a writer beside a renewed reader').toBeNull();
    await kept!.release();
    const writer = await within(c.readWrite(key).write({ waitMs: 3000 }), 5000, 'the writer once the last reader left');
    expect(writer.token).toBeGreaterThan(lapsing!.token);
    await writer.release();
  });
});
