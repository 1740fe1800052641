import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { FaultProxy } from '@holdfast/test-harness/faults';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { queueKeys } from './queue-keys.js';

const consul = await useBackend('consul');

/**
 * The wait queue under faults: an entry that outlives its waiter (a delete that failed, a write that
 * landed after the delete) must not hold up the waiters behind it, and a queued acquire answers at its
 * deadline even when its agent hangs. Each waiter's ttlMs gives a session TTL (>= 10 s) far beyond the
 * waits here, so the old code's orphan never lapses within a test.
 */
describe.skipIf(!consul.url)('the wait queue under faults', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const agent = new URL(http || 'http://127.0.0.1:1');
  const providers: LockProvider[] = [];
  const proxies: FaultProxy[] = [];
  const provider = (prefix: string, url = http, callTimeoutMs?: number): LockProvider => {
    const created = createConsulProvider({ url, prefix, lockDelayMs: 0, callTimeoutMs });
    providers.push(created);
    return created;
  };
  const proxied = async (): Promise<{ proxy: FaultProxy; url: string }> => {
    const proxy = await FaultProxy.start({ host: agent.hostname, port: Number(agent.port) });
    proxies.push(proxy);
    return { proxy, url: `http://127.0.0.1:${proxy.address.port}` };
  };
  const queued = (prefix: string, count: number, what: string): Promise<number> =>
    until(async () => (await queueKeys(http, prefix, 'job')).length === count, 5000, what, { everyMs: 10 });
  afterEach(async () => {
    await within(Promise.all(providers.splice(0).map((p) => p.close())), 10_000, 'every provider closed');
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  test("(A) a waiter's delete fails in a brief cut as it gives up; the waiter behind it is served once the key is free", async () => {
    const prefix = `holdfast-qcut-${randomBytes(3).toString('hex')}`;
    const { proxy, url } = await proxied();
    const held = await provider(prefix).acquire('job', { ttlMs: 30_000 });
    const gaveUp = new AbortController();
    const first = rejection(provider(prefix, url, 500).acquire('job', { waitMs: 60_000, ttlMs: 30_000, signal: gaveUp.signal }));
    await queued(prefix, 1, 'the first waiter queued');
    const second = provider(prefix).acquire('job', { waitMs: 8000, ttlMs: 30_000 });
    second.catch(() => undefined); // awaited below; only a test that failed earlier leaves it unawaited
    await queued(prefix, 2, 'the second waiter queued');
    proxy.cut('silent');
    const accepted = proxy.connectionsAccepted;
    gaveUp.abort(new Error('gave up'));
    expect(codeOf(await within(first, 2000, 'the aborted acquire rejects'))).toBe(ErrorCode.Aborted);
    // The entry's delete went out on a connection the cut agent never answers: it fails.
    await until(async () => proxy.connectionsAccepted > accepted, 2000, 'the delete sent into the cut', { everyMs: 5 });
    proxy.restore();
    await held.release();
    const lock = await within(second, 5000, 'the second waiter served although the first one left an entry behind');
    expect(await lock.isHeld()).toBe(true);
    await lock.release();
    await queued(prefix, 0, 'nothing left in the queue');
  }, 30_000);

  test("(B) a waiter's queue write held back 3 s lands after it gave up and deleted its entry; later waiters are not held up", async () => {
    const prefix = `holdfast-qlate-${randomBytes(3).toString('hex')}`;
    const { proxy, url } = await proxied();
    const holder = provider(prefix);
    const stalled = provider(prefix, url);
    // Warm up: the stalled provider's lock and queue sessions exist, so its requests for "job" are
    // the lock attempt (txn; a taken key is not read) and then the queue write (txn): the second chunk.
    const warm = await holder.acquire('warm', { ttlMs: 30_000 });
    const warmWait = stalled.acquire('warm', { waitMs: 10_000, ttlMs: 30_000 });
    await until(async () => (await queueKeys(http, prefix, 'warm')).length === 1, 5000, 'the warm-up waiter queued', { everyMs: 10 });
    await warm.release();
    await (await within(warmWait, 5000, 'the warm-up waiter served')).release();

    const held = await holder.acquire('job', { ttlMs: 30_000 });
    const hold = proxy.holdClientChunk(2, 3000);
    const gaveUp = new AbortController();
    const first = rejection(stalled.acquire('job', { waitMs: 60_000, ttlMs: 30_000, signal: gaveUp.signal }));
    const chunk = await within(hold.engaged, 5000, 'the queue write held back');
    // The lock attempt's transaction starts with "check-not-exists"; the queue write with "lock".
    expect(chunk.preview).toContain('[{"KV":{"Verb":"lock"');
    gaveUp.abort(new Error('gave up'));
    expect(codeOf(await within(first, 2000, 'the aborted acquire rejects'))).toBe(ErrorCode.Aborted);
    await within(hold.released, 5000, 'the held queue write passed on to the agent');
    // A read through the proxy after it: the held write has reached the agent by its answer.
    const before = new Set(await queueKeys(url, prefix, 'job'));
    const second = provider(prefix).acquire('job', { waitMs: 6000, ttlMs: 30_000 });
    second.catch(() => undefined); // awaited below; only a test that failed earlier leaves it unawaited
    const ownEntry = async (): Promise<boolean> => (await queueKeys(http, prefix, 'job')).some((key) => !before.has(key));
    await until(ownEntry, 5000, 'the second waiter queued', { everyMs: 10 });
    await held.release();
    const lock = await within(second, 5000, 'the second waiter served although a late write left an entry');
    expect(await lock.isHeld()).toBe(true);
    await lock.release();
  }, 30_000);

  test('a waiter blocked behind another answers at its deadline when its agent hangs', async () => {
    const prefix = `holdfast-qhung-${randomBytes(3).toString('hex')}`;
    const { proxy, url } = await proxied();
    const held = await provider(prefix).acquire('job', { ttlMs: 30_000 });
    const first = provider(prefix).acquire('job', { waitMs: 20_000, ttlMs: 30_000 });
    first.catch(() => undefined); // awaited below; only a test that failed earlier leaves it unawaited
    await queued(prefix, 1, 'the first waiter queued');
    const waitMs = 3000;
    const startedAt = Date.now();
    // callTimeoutMs 5 s: the blocking read's own HTTP bound would be 1.1 x 3 s + 5 s.
    const second = rejection(provider(prefix, url, 5000).acquire('job', { waitMs, ttlMs: 30_000 }));
    await queued(prefix, 2, 'the second waiter queued behind the first');
    proxy.pause();
    const error = await within(second, waitMs + 4000, 'the second waiter answers');
    const tookMs = Date.now() - startedAt;
    expect(codeOf(error)).toBe(ErrorCode.Timeout);
    expect(tookMs).toBeLessThan(waitMs + 1000);
    proxy.resume();
    await held.release();
    await (await within(first, 10_000, 'the first waiter served')).release();
  }, 30_000);
});
