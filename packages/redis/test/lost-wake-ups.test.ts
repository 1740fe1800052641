import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import type { RedisProviderOptions } from '../src/index.js';
import { providersClosedAfterEach, serverWithAdmin } from './fixture.js';

// Pub/sub is fire-and-forget: a release published while a waiter's subscriber connection is down,
// or to a client the server will not let subscribe, is lost. No waiter may sleep through it: the
// (re)subscription, the holder's lease end and pollIntervalMs each wake one waiter per key.

const { server, admin } = await serverWithAdmin();

const tracked = providersClosedAfterEach();
const open = (options: Partial<RedisProviderOptions> = {}): LockProvider =>
  tracked.open({ url: server!.url, pollIntervalMs: 60_000, ...options });

let keyCount = 0;
const newKey = (): string => `lost-wake-ups/${++keyCount}`;

/** Pub/sub connections (a provider's wake channel or its patterns: each provider that has waited has one per server). */
async function subscribers(): Promise<number> {
  const clients = (await admin!.client('LIST')) as string;
  return clients.split('\n').filter((line) => / p?sub=[1-9]/.test(line)).length;
}

describe.skipIf(!server)('lost release messages', { timeout: 30_000 }, () => {
  test('the subscriber connection dropped as the holder releases: the waiters still get the lock at once, and later releases wake them again', async () => {
    const [holder, waiter] = [open(), open()];
    const key = newKey();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const before = await subscribers();
    const first = waiter.acquire(key, { waitMs: 20_000, ttlMs: 60_000 });
    const second = waiter.acquire(key, { waitMs: 20_000, ttlMs: 60_000 });
    await until(async () => (await subscribers()) > before, 5000, 'the waiter subscribes');
    // The server closes every pub/sub connection (the waiter's); the release is published to nobody.
    await admin!.client('KILL', 'TYPE', 'pubsub');
    const releasedAt = performance.now();
    await held!.release();
    const lock = await within(first, 3000, 'the first waiter is granted although the release message was lost');
    expect(performance.now() - releasedAt, 'granted by the re-subscription, not the 60 s re-check').toBeLessThan(2000);
    await until(async () => (await subscribers()) > before, 5000, 'the waiter subscribes again');
    const handedAt = performance.now();
    await lock.release();
    await (await within(second, 3000, 'the second waiter is granted')).release();
    expect(performance.now() - handedAt, 'a release after the reconnect wakes the next waiter through pub/sub').toBeLessThan(500);
  });

  test("a holder whose ACL refuses the waiter's wake channel still releases, and the next in line is granted at its pollIntervalMs", async () => {
    await admin!.acl('SETUSER', 'releasedonly', 'on', 'nopass', '~*', 'resetchannels', '&holdfast:released@*', '+@all');
    const url = new URL(server!.url);
    url.username = 'releasedonly';
    url.password = 'any';
    const pollIntervalMs = 300;
    const holder = open({ url: url.toString() });
    const waiter = open({ pollIntervalMs });
    const key = newKey();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const waiting = waiter.acquire(key, { waitMs: 20_000 });
    await until(async () => (await admin!.zcard(`{holdfast:${key}}//queue`)) === 1, 5000, 'the waiter is queued');
    const releasedAt = performance.now();
    // The release script's publish to the waiter's wake channel is refused: the release must not fail with it.
    await within(held!.release(), 3000, 'the release answers');
    await (await within(waiting, 3000, 'the waiter is granted without its wake message')).release();
    expect(performance.now() - releasedAt, 'noticed within pollIntervalMs').toBeLessThan(pollIntervalMs + 300);
  });

  test('a waiter the server will not let subscribe (an ACL) is woken at pollIntervalMs after a release, and at the lease end after an expiry', async () => {
    await admin!.acl('SETUSER', 'nosubscribe', 'on', 'nopass', '~*', '&*', '+@all', '-psubscribe', '-subscribe');
    const url = new URL(server!.url);
    url.username = 'nosubscribe';
    url.password = 'any';
    const pollIntervalMs = 400;
    const holder = open();
    const waiter = open({ url: url.toString(), pollIntervalMs });
    const key = newKey();
    const held = await holder.tryAcquire(key, { ttlMs: 60_000 });
    const waiting = waiter.acquire(key, { waitMs: 20_000 });
    // The refusal: the waiter's subscription never becomes active.
    await until(async () => ((await admin!.acl('LOG')) as unknown[]).length > 0, 5000, 'the server refuses the subscription');
    expect(await subscribers()).toBe(0);
    const releasedAt = performance.now();
    await held!.release();
    await (await within(waiting, 3000, 'the waiter is granted without a release message')).release();
    expect(performance.now() - releasedAt, 'noticed within pollIntervalMs').toBeLessThan(pollIntervalMs + 300);

    const slow = open({ url: url.toString(), pollIntervalMs: 60_000 });
    const ttlMs = 800;
    const lapsing = await holder.tryAcquire(key, { ttlMs, autoRenew: false });
    const grantedAt = performance.now();
    const next = await within(slow.acquire(key, { waitMs: 20_000 }), 5000, 'the waiter is granted after the lease runs out');
    expect(lapsing!.signal.aborted, 'the old holder is told before the waiter is granted').toBe(true);
    expect(performance.now() - grantedAt, 'woken at the lease end (the busy answer said when), not at the 60 s re-check').toBeLessThan(
      ttlMs + 400,
    );
    await next.release();
  });
});
