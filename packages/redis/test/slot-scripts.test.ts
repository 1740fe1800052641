import { until } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { KeyNames, type LockKeys } from '../src/key-names.js';
import { EXTEND_SLOT, RELEASE_SLOT, SLOT_HOLDERS, TAKE_SLOT } from '../src/slot-scripts.js';

// The semaphore scripts themselves, on a real server: leases are judged on the server's clock
// (TIME inside the script; no script takes a client time), lapsed members are pruned by whichever
// script runs next, and the keys go with the last slot.

const redis = await useBackend('redis');
const raw = redis.url ? new Redis(redis.url) : undefined;
afterAll(() => raw?.disconnect());

const names = new KeyNames('holdfast:', 0);
let keyCount = 0;
const newKeys = (): LockKeys => names.of(`slot-scripts/${process.pid}/${Date.now()}-${++keyCount}`);

async function serverNowMs(): Promise<number> {
  const [seconds, micros] = await raw!.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

const take = (keys: LockKeys, lockId: string, ttlMs: number, limit: number): Promise<unknown> =>
  TAKE_SLOT.run(raw!, [keys.lock, keys.slots, keys.fence], [lockId, ttlMs, limit, 'owner', '', '0']);

describe.skipIf(!redis.url)(`semaphore scripts (${redis.label})`, { timeout: 20_000 }, () => {
  test("a member whose lease passed on the server's clock is pruned by the next script; a live one is not", async () => {
    const keys = newKeys();
    // Scores written relative to the server's own clock: "short" ends 300 ms from the server's now.
    const now = await serverNowMs();
    await raw!.zadd(keys.lock, now + 300, 'short', now + 60_000, 'long');
    await raw!.hset(keys.slots, 'limit', '2', 'short', '{"owner":"a","at":"0","token":"1"}', 'long', '{"owner":"b","at":"0","token":"2"}');
    await raw!.pexpireat(keys.lock, now + 60_000);
    await raw!.pexpireat(keys.slots, now + 60_000);

    const busy = (await take(keys, 'third', 30_000, 2)) as [number, number];
    expect(busy[0], 'a third slot of two was granted').toBe(0);
    // The busy hint is the earliest lease end, from the server's clock.
    expect(busy[1]).toBeGreaterThan(0);
    expect(busy[1]).toBeLessThanOrEqual(300);

    await until(async () => (await serverNowMs()) > now + 300, 3000, "the server's clock passes the short lease", { everyMs: 20 });
    expect(await EXTEND_SLOT.run(raw!, [keys.lock, keys.slots], ['short', 30_000]), 'a lapsed member was extended').toBe(0);
    expect(await raw!.zrange(keys.lock, 0, -1)).toEqual(['long']);
    expect((await raw!.hkeys(keys.slots)).sort(), "the lapsed member's holder record is left").toEqual(['limit', 'long']);

    const granted = (await take(keys, 'third', 30_000, 2)) as [number, string, string];
    expect(granted[0], 'the pruned slot was not granted again').toBe(1);
    expect((await raw!.zrange(keys.lock, 0, -1)).sort()).toEqual(['long', 'third']);
  });

  test('a slot lease is the server time of the grant plus the TTL; the keys live until the last lease ends', async () => {
    const keys = newKeys();
    const before = await serverNowMs();
    const [code, , acquiredAt] = (await take(keys, 'a', 5000, 3)) as [number, string, string];
    await take(keys, 'b', 20_000, 3);
    const after = await serverNowMs();
    expect(code).toBe(1);
    expect(Number(acquiredAt)).toBeGreaterThanOrEqual(before);
    expect(Number(acquiredAt)).toBeLessThanOrEqual(after);
    const scoreA = Number(await raw!.zscore(keys.lock, 'a'));
    expect(scoreA - Number(acquiredAt)).toBe(5000);
    const scoreB = Number(await raw!.zscore(keys.lock, 'b'));
    for (const key of [keys.lock, keys.slots]) {
      expect(await raw!.call('pexpiretime', key), `${key} does not expire with the last lease`).toBe(scoreB);
    }
    // Releasing the longest lease moves both keys' expiry back to the remaining one.
    expect(await RELEASE_SLOT.run(raw!, [keys.lock, keys.slots], ['b', keys.channel])).toBe(1);
    expect(await raw!.call('pexpiretime', keys.slots)).toBe(scoreA);
    expect(await RELEASE_SLOT.run(raw!, [keys.lock, keys.slots], ['b', keys.channel]), 'released twice').toBe(0);
    expect(await RELEASE_SLOT.run(raw!, [keys.lock, keys.slots], ['a', keys.channel])).toBe(1);
    expect(await raw!.exists(keys.lock, keys.slots), 'the last release left a key behind').toBe(0);
    expect(await raw!.hkeys(keys.fence)).toEqual(['fence']);
  });

  test('another limit, a plain lock at the key, and a missing limit record are refused; holders are read in one script', async () => {
    const keys = newKeys();
    await take(keys, 'a', 30_000, 2);
    expect(await take(keys, 'b', 30_000, 3)).toEqual([-2, 2]);
    expect(await SLOT_HOLDERS.run(raw!, [keys.lock, keys.slots], [])).toEqual([
      expect.stringMatching(/^\d+$/),
      '2',
      'a',
      expect.stringMatching(/^\d+$/),
      expect.stringContaining('"owner":"owner"'),
    ]);
    await raw!.hdel(keys.slots, 'limit');
    expect(await take(keys, 'b', 30_000, 2), 'a slot was granted without a known limit').toEqual([-2, -1]);

    const plain = newKeys();
    await raw!.set(plain.lock, 'a plain holder', 'PX', 30_000);
    expect(await take(plain, 'a', 30_000, 2)).toEqual([-1]);
    expect(await SLOT_HOLDERS.run(raw!, [plain.lock, plain.slots], [])).toEqual([]);
    await raw!.del(keys.lock, keys.slots, keys.fence, plain.lock);
  });
});
