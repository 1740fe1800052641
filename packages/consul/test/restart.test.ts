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
      const provider = createConsulProvider({ url: agent.httpUrl, prefix: 'holdfast-restart', lockDelayMs: 1000, monitorRetryMs: 1000 });
      providers.push(provider);
      return provider;
    };
    const holder = make();
    // Push the index up, so that tokens after the restart start far below the holder's.
    const churn = make();
    for (let i = 0; i < 30; i++) await (await churn.acquire('churn', { waitMs: 5000 })).release();
    // A 60 s lease renews its session every 15 s: a holder that waited for a renewal to fail would learn late.
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

  test('a queued waiter rides out the restart: it queues again and is served, nothing hangs', async () => {
    const make = (): LockProvider => {
      const provider = createConsulProvider({
        url: agent.httpUrl,
        prefix: 'holdfast-restart-queue',
        lockDelayMs: 1000,
        monitorRetryMs: 1000,
      });
      providers.push(provider);
      return provider;
    };
    const holder = make();
    const waiter = make();
    const lock = await holder.acquire('queued-job');
    const waiting = waiter.acquire('queued-job', { waitMs: 60_000 });
    await until(
      async () => (await queueKeys(agent.httpUrl, 'holdfast-restart-queue', 'queued-job')).length === 1,
      5000,
      'the waiter queued',
    );

    await agent.kill();
    await agent.start();
    // The state is gone: the holder's lock, the waiter's entry and its session. The waiter queues again and takes the key.
    const served = await within(waiting, 20_000, 'the waiter served after the restart');
    expect(await served.isHeld()).toBe(true);
    await abortedWithin(lock.signal, 6000, 'the holder told its lock is gone');
    await lock.release();
    await served.release();
    await until(async () => (await queueKeys(agent.httpUrl, 'holdfast-restart-queue', 'queued-job')).length === 0, 2000, 'the queue empty');
    await within(Promise.all([holder.close(), waiter.close()]), 5000, 'both providers close at once');
  }, 90_000);
});
