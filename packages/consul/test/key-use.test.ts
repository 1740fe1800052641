import { randomBytes } from 'node:crypto';
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, elapsed, lostWithin, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider, LOCK_FLAG } from '../src/index.js';

const consul = await useBackend('consul');
const PREFIX = 'holdfast-key-use';
const CALL_MS = 5000;

describe.skipIf(!consul.url)('a key is a lock or a semaphore, whatever the race and whatever was left behind', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const providers: LockProvider[] = [];
  const provider = (): LockProvider => {
    const created = createConsulProvider({ url: http, prefix: PREFIX, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  const consulApi = async (method: string, path: string, body?: string): Promise<unknown> => {
    const response = await fetch(`${http}${path}`, { method, body, signal: AbortSignal.timeout(CALL_MS) });
    expect(response.ok, `${method} ${path}: HTTP ${response.status}`).toBe(true);
    return response.json();
  };
  const exists = async (consulKey: string): Promise<boolean> => {
    const response = await fetch(`${http}/v1/kv/${consulKey}`, { signal: AbortSignal.timeout(CALL_MS) });
    return response.status === 200;
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
  });

  test('a lock and a slot of one key raced from two providers are never both granted', async () => {
    const [locker, slotter] = [provider(), provider()];
    let locks = 0;
    let slots = 0;
    for (let round = 0; round < 20; round++) {
      const key = `race-${randomBytes(4).toString('hex')}`;
      const outcomes = await within(
        Promise.allSettled([locker.tryAcquire(key), slotter.semaphore(key, 2).tryAcquire()]),
        2 * CALL_MS,
        'both attempts answer',
      );
      const granted = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' && outcome.value ? [outcome.value] : []));
      for (const outcome of outcomes)
        if (outcome.status === 'rejected')
          expect(codeOf(outcome.reason), 'a race ended in an error that is no conflict').toBe(ErrorCode.Conflict);
      expect(granted.length, `round ${round}: the key was granted as a lock and as a semaphore at once`).toBeLessThanOrEqual(1);
      if (outcomes[0].status === 'fulfilled' && outcomes[0].value) locks++;
      if (outcomes[1].status === 'fulfilled' && outcomes[1].value) slots++;
      await within(Promise.all(granted.map((grant: Lock) => grant.release())), CALL_MS, 'release answers');
    }
    // Exactly one wins each round: the guard refuses the loser, it never refuses both.
    expect(locks + slots, 'a round granted neither').toBe(20);
  });

  test("a semaphore whose holders are all dead does not keep the key from a lock, which clears the semaphore's record", async () => {
    const key = `dead-${randomBytes(4).toString('hex')}`;
    const [holder, locker] = [provider(), provider()];
    const slot = await within(holder.semaphore(key, 1).tryAcquire(), CALL_MS, 'tryAcquire answers');
    expect(slot, 'a free slot was not granted').not.toBeNull();
    const [info] = await within(holder.semaphore(key, 1).holders(), CALL_MS, 'holders() answers');
    expect(
      codeOf(
        await within(
          locker.tryAcquire(key).catch((error: unknown) => error),
          CALL_MS,
          'tryAcquire answers',
        ),
      ),
    ).toBe(ErrorCode.Conflict);
    await consulApi('PUT', `/v1/session/destroy/${info!.details!['session']}`);
    await lostWithin(slot!, 2000, 'the holder of a destroyed session is told');
    const lock = await within(locker.tryAcquire(key), CALL_MS, 'tryAcquire answers');
    expect(lock, 'a dead holder still kept the key from a lock').not.toBeNull();
    expect(await exists(`${PREFIX}/${key}/.lock`), "the dead semaphore's record was left behind").toBe(false);
    await within(lock!.release(), CALL_MS, 'release answers');
  });

  test("a free lock entry left by the Go client's Unlock gives way to a slot, but not during its lock-delay", async () => {
    const key = `left-${randomBytes(4).toString('hex')}`;
    const consulKey = `${PREFIX}/${key}`;
    const locks = provider();
    // The Go client's Unlock: the key stays, with no session.
    const released = (await consulApi('PUT', '/v1/session/create', JSON.stringify({ TTL: '10s', LockDelay: '0s' }))) as { ID: string };
    expect(await consulApi('PUT', `/v1/kv/${consulKey}?acquire=${released.ID}&flags=${LOCK_FLAG}`, 'go')).toBe(true);
    expect(await consulApi('PUT', `/v1/kv/${consulKey}?release=${released.ID}&flags=${LOCK_FLAG}`, 'go')).toBe(true);
    await consulApi('PUT', `/v1/session/destroy/${released.ID}`);
    const slot = await within(locks.semaphore(key, 2).tryAcquire(), CALL_MS, 'tryAcquire answers');
    expect(slot, 'a free lock entry kept the key from a semaphore').not.toBeNull();
    expect(await exists(consulKey), 'the free lock entry was left beside the semaphore').toBe(false);
    await within(slot!.release(), CALL_MS, 'release answers');
    // A holder's session invalidated: the key is free of sessions but under a 2 s lock-delay.
    const invalidated = (await consulApi('PUT', '/v1/session/create', JSON.stringify({ TTL: '10s', LockDelay: '2s' }))) as { ID: string };
    expect(await consulApi('PUT', `/v1/kv/${consulKey}?acquire=${invalidated.ID}&flags=${LOCK_FLAG}`, 'go')).toBe(true);
    await consulApi('PUT', `/v1/session/destroy/${invalidated.ID}`);
    const started = performance.now();
    expect(
      await within(locks.semaphore(key, 2).tryAcquire(), CALL_MS, 'tryAcquire answers'),
      'a slot was granted under the lock-delay',
    ).toBeNull();
    const taken = await within(
      elapsed(() => locks.semaphore(key, 2).acquire({ waitMs: 6000 })),
      7000,
      'the slot is granted after the lock-delay',
    );
    const waitedMs = performance.now() - started;
    expect(waitedMs, 'granted before the lock-delay ended').toBeGreaterThan(1500);
    expect(taken.ms, 'the slot came long after the lock-delay ended').toBeLessThan(4000);
    await within(taken.value.release(), CALL_MS, 'release answers');
  });
});
