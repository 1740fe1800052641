import { ErrorCode, type LockProvider } from '@holdfast/core';
import { abortedWithin, elapsed, until, within } from '@holdfast/test-harness/helpers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { queueKeys } from './queue-keys.js';
import { type RestartableConsul, startRestartableConsul } from './restartable-consul.js';

const missing = await needLocalBinary('consul');

describe.skipIf(missing !== null)('an agent restarted without its data (consul agent -dev)', () => {
  let agent: RestartableConsul;
  const providers: LockProvider[] = [];
  beforeAll(async () => {
    agent = await startRestartableConsul();
  }, 90_000);
  afterAll(async () => {
    await Promise.allSettled(providers.map((p) => p.close()));
    await agent?.stop();
  }, 60_000);

  test('holders learn at once that the state (and the token sequence) was reset; a stale release frees nothing', async () => {
    const make = (): LockProvider => {
      // Consul's default lock-delay: with a 1 s one the session, renewed every 0.45 s, would tell the
      // holder of the restart before the watch does, and the watch is what this test is about.
      const provider = createConsulProvider({ url: agent.httpUrl, prefix: 'holdfast-restart', lockDelayMs: 15_000, monitorRetryMs: 1000 });
      providers.push(provider);
      return provider;
    };
    const holder = make();
    // Push the index up, so that tokens after the restart start far below the holder's.
    const churn = make();
    for (let i = 0; i < 30; i++) await (await churn.acquire('churn', { waitMs: 5000 })).release();
    // A 60 s lease renews its session every 7 s: a holder that waited for a renewal to fail would learn late.
    const lock = (await holder.tryAcquire('job', { ttlMs: 60_000 }))!;
    expect(lock).not.toBeNull();

    await agent.kill();
    await agent.start();
    const readyAt = Date.now();
    const { ms: toldAfter } = await elapsed(() => abortedWithin(lock.signal, 6000, 'holder told its lock is gone after the restart'));
    expect((lock.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
    expect((lock.signal.reason as Error).message).toMatch(/state was reset/);
    console.info(
      `[consul restart] holder told ${Date.now() - readyAt} ms after the restarted agent was ready (${Math.round(toldAfter)} ms after start() returned): ${(lock.signal.reason as Error).message}`,
    );

    const other = make();
    const after = await within(other.acquire('job', { waitMs: 10_000 }), 11_000, 'acquire after the restart');
    console.info(`[consul restart] token before the restart ${lock.token}, after ${after.token}`);
    // What the docs warn about: without durable server state the token sequence starts again.
    expect(after.token).toBeLessThan(lock.token);
    await lock.release();
    expect(await after.isHeld()).toBe(true);
    expect(after.signal.aborted).toBe(false);
    await after.release();
  }, 90_000);

  test('queued waiters ride out the restart: they queue again and are served, nothing hangs', async () => {
    const prefix = 'holdfast-restart-queue';
    const make = (): LockProvider => {
      const provider = createConsulProvider({ url: agent.httpUrl, prefix, lockDelayMs: 1000, monitorRetryMs: 1000 });
      providers.push(provider);
      return provider;
    };
    const queued = (count: number, what: string): Promise<number> =>
      until(async () => (await queueKeys(agent.httpUrl, prefix, 'queued-job')).length === count, 5000, what);
    const holder = make();
    const lock = await holder.acquire('queued-job');
    // The head waits on the lock key; the one behind it on the head's entry (a query of the queue's own).
    const waiters = [make(), make()];
    const first = waiters[0]!.acquire('queued-job', { waitMs: 60_000 });
    await queued(1, 'the first waiter queued');
    const second = waiters[1]!.acquire('queued-job', { waitMs: 60_000 });
    await queued(2, 'the second waiter queued');

    await agent.kill();
    await agent.start();
    // The state is gone: the holder's lock, the entries and their session. The waiters queue again and take the key in turn.
    const served = await within(Promise.race([first, second]), 20_000, 'a waiter served after the restart');
    expect(await served.isHeld()).toBe(true);
    await abortedWithin(lock.signal, 6000, 'the holder told its lock is gone');
    await lock.release();
    await served.release();
    const both = await within(Promise.all([first, second]), 20_000, 'the other waiter served after it');
    await both.find((other) => other !== served)!.release();
    await queued(0, 'the queue empty');
    await within(Promise.all([holder, ...waiters].map((provider) => provider.close())), 5000, 'every provider closes at once');
  }, 90_000);
});
