import { ErrorCode, type Lock, type LockInfo, type LockProvider } from '@holdfast/core';
import { expect, test } from 'vitest';
import { codeOf, lostWithin } from '../helpers/index.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, skipBecause } from './support.js';

const keysOf = (infos: readonly LockInfo[]): string[] => infos.map((info) => info.key);
/** Sorted as list() sorts: by key, UTF-16 code units (the keys here are ASCII, where every order agrees). */
const sorted = (keys: readonly string[]): string[] => [...keys].sort();

/** Characters that mean something in a backend's pattern language: globs (Redis MATCH), LIKE, regular expressions, escapes. */
const SPECIAL = ['*', '?', '[', ']', '%', '_', '\\', '{', '}', '^', '$', '.', '+', '('];
/** Keys per page of a backend's listing unless the target says otherwise (Redis SCAN and its pipelines). */
const DEFAULT_PAGE_SIZE = 1000;
/** Grants and releases in flight at once when taking many keys. */
const PARALLEL = 50;
/**
 * The bound for one batch of grants or releases: a backend that serializes writes (FerretDB on SQLite)
 * answers a batch one write after the other, so a batch may take several calls' time.
 */
const BATCH_CALLS = 4;

async function holdAll(c: CaseContext, provider: LockProvider, keys: readonly string[]): Promise<Lock[]> {
  const locks: Lock[] = [];
  for (let start = 0; start < keys.length; start += PARALLEL) {
    const batch = keys.slice(start, start + PARALLEL);
    // Long, unrenewed leases: thousands of renewals would only load the backend.
    const granted = await c.within(
      'tryAcquire of a batch answers',
      Promise.all(batch.map((key) => provider.tryAcquire(key, { ttlMs: 120_000, autoRenew: false }))),
      BATCH_CALLS * c.timing.callMs,
    );
    const refused = batch.filter((_, i) => granted[i] === null);
    expect(refused, 'tryAcquire of free keys returned no lock').toEqual([]);
    locks.push(...(granted as Lock[]));
  }
  return locks;
}

async function releaseAll(c: CaseContext, locks: readonly Lock[]): Promise<void> {
  for (let start = 0; start < locks.length; start += PARALLEL) {
    const batch = locks.slice(start, start + PARALLEL);
    await c.within('release of a batch answers', Promise.all(batch.map((lock) => lock.release())), BATCH_CALLS * c.timing.callMs);
  }
}

export function listingExactCases(cases: CaseFactory): void {
  test('73. list() matches its prefix as a plain string: characters special in pattern languages match only themselves; semaphore slots are not listed', async (t) => {
    const c = cases(t);
    const [a, observer] = await c.providers2();
    const base = c.key('patterns');
    const special = SPECIAL.map((char) => `${base}/a${char}b`);
    // What a pattern would also match: any character or none where a special one stands, a class's members.
    const decoys = ['aXb', 'ab', 'aab', 'abb', 'a', 'b', 'a\\\\b', 'aXbY'].map((tail) => `${base}/${tail}`);
    const keys = [...special, ...decoys];
    const locks = await holdAll(c, a, keys);
    for (const prefix of [`${base}/a`, `${base}/`, base]) {
      const listed = keysOf(await c.within('list answers', observer.list({ prefix })));
      expect(listed, `list({ prefix: ${JSON.stringify(prefix)} }) is not the held keys that start with that string, in key order`).toEqual(
        sorted(keys.filter((key) => key.startsWith(prefix))),
      );
    }
    for (const char of SPECIAL) {
      // A prefix that ends in the special character: a glob's "*" or a LIKE's "%" would match every key here.
      const prefix = `${base}/a${char}`;
      const listed = keysOf(await c.within('list answers', observer.list({ prefix })));
      expect(listed, `list({ prefix: ${JSON.stringify(prefix)} }) matched ${JSON.stringify(char)} as a pattern`).toEqual(
        sorted(keys.filter((key) => key.startsWith(prefix))),
      );
    }

    // docs/listing.md: list() shows plain locks only; a semaphore's holders come from holders().
    const semaphoreKey = `${base}/semaphore`;
    let slot: Lock | null = null;
    try {
      slot = await c.within('tryAcquire answers', a.semaphore(semaphoreKey, 2).tryAcquire());
    } catch (error) {
      if (codeOf(error) !== ErrorCode.Unsupported) throw error;
    }
    if (slot) {
      expect(keysOf(await c.within('list answers', observer.list({ prefix: semaphoreKey }))), 'list() shows a semaphore key').toEqual([]);
      expect(keysOf(await c.within('list answers', observer.list({ prefix: base }))), 'list() shows a semaphore key among locks').toEqual(
        sorted(keys),
      );
      await c.within('release answers', slot.release());
    }
    await releaseAll(c, locks);
    expect(await c.within('list answers', observer.list({ prefix: base })), 'list() still shows released locks').toEqual([]);
  });

  test('74. list() shows each of more keys than one scan page (1.5 pages) exactly once, in key order', async (t) => {
    const c = cases(t);
    const pageSize = c.target.listPageSize ?? DEFAULT_PAGE_SIZE;
    const manyKeys = Math.max(150, Math.ceil(1.5 * pageSize));
    const limit = c.target.heldLocksLimit;
    if (limit && limit.max < manyKeys) return skipBecause(t, `${c.target.name} holds at most ${limit.max} locks at once: ${limit.reason}`);
    const [a, observer] = await c.providers2();
    const base = c.key('many');
    const keys = Array.from({ length: manyKeys }, (_, i) => `${base}/${String(i).padStart(5, '0')}`);
    const locks = await holdAll(c, a, keys);
    const listed = keysOf(await c.within('list of thousands of keys answers', observer.list({ prefix: `${base}/` }), 2 * c.timing.callMs));
    const counts = new Map<string, number>();
    for (const key of listed) counts.set(key, (counts.get(key) ?? 0) + 1);
    const twice = [...counts].filter(([, count]) => count > 1).map(([key]) => key);
    const missing = keys.filter((key) => !counts.has(key));
    expect(twice.slice(0, 5), `list() showed ${twice.length} keys more than once`).toEqual([]);
    expect(missing.slice(0, 5), `list() missed ${missing.length} of ${manyKeys} held keys`).toEqual([]);
    expect(listed, 'list() of thousands of keys is not exactly the held keys in key order').toEqual(keys);
    await releaseAll(c, locks);
  });
}

/**
 * Cases of this area that wait for leases to run out or to be renewed: registered with the expiry cases
 * (see index.ts), side by side with them, so that their waits overlap.
 */
export function heldLossCases(cases: CaseFactory): void {
  test.concurrent("75. held() drops a lock as soon as it is lost (forced release, lapsed lease) and shows the handle's renewed expiry", async (t) => {
    const c = cases(t);
    const [a, admin] = await c.providers2();
    const ttlMs = c.timing.shortTtlMs;
    const [renewedKey, lapsingKey, forcedKey] = [c.key('renewed'), c.key('lapsing'), c.key('forced')];
    const renewed = await c.within('tryAcquire answers', a.tryAcquire(renewedKey, { ttlMs }));
    const lapsing = await c.within('tryAcquire answers', a.tryAcquire(lapsingKey, { ttlMs, autoRenew: false }));
    // Long enough that no renewal misses its deadline on a loaded machine: only the forced release may explain a loss.
    const forced = await c.within('tryAcquire answers', a.tryAcquire(forcedKey, { ttlMs: Math.max(ttlMs, 2 * c.timing.slackMs) }));
    expect(renewed && lapsing && forced, 'a free key was refused').toBeTruthy();
    expect(keysOf(a.held()), 'held() misses a held lock').toEqual(sorted([renewedKey, lapsingKey, forcedKey]));

    expect(await c.within('forceRelease answers', admin.forceRelease(forcedKey)), 'forceRelease of a held key').toBe(true);
    await lostWithin(forced!, c.timing.callMs, 'a force-released holder is told');
    expect(keysOf(a.held()), 'held() still shows a lock once its holder was told it was force-released').not.toContain(forcedKey);
    await lostWithin(lapsing!, ttlMs + c.timing.slackMs, 'the holder of a lapsed lease is told');
    expect(keysOf(a.held()), 'held() still shows a lock once its holder was told its lease ran out').toEqual([renewedKey]);

    const first = renewed!.expiresAt?.getTime();
    if (first !== undefined) {
      await c.until("the handle's expiry moves with a renewal", () => renewed!.expiresAt!.getTime() > first, ttlMs + c.timing.slackMs);
      expect(a.held()[0]!.expiresAt?.getTime(), "held() does not show the handle's renewed expiry").toBe(renewed!.expiresAt!.getTime());
    }
    const longMs = Math.min(60_000, c.capabilities.maxTtlMs);
    await c.within('extend answers', renewed!.extend(longMs));
    expect(a.held()[0]!.expiresAt?.getTime() ?? null, "held() does not show the handle's expiry after extend()").toBe(
      renewed!.expiresAt?.getTime() ?? null,
    );
    await c.within('release answers', renewed!.release());
    expect(a.held(), 'held() still shows a released lock').toEqual([]);
  });
}
