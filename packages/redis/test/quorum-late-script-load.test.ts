import { until, within } from '@holdfast/test-harness/helpers';
import type { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { createRedisProvider, DEFAULT_PREFIX } from '../src/index.js';
import { QUORUM_RELEASE } from '../src/scripts.js';
import { adminConnection, providersClosedAfterEach, threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';

// late-script-load.test.ts on a quorum of 3: the grant script, unknown to every node (SCRIPT FLUSH),
// goes out as EVALSHA, then as EVAL one round trip later. The caller aborts while the EVALSHAs are
// held (CLIENT PAUSE WRITE); an undo sent at once ran before the late EVALs, which then granted the
// key on every node to a lockId nobody holds, for its whole lease.

const three = await threeNodes();
const admins = three.map((node) => adminConnection(node.url)!);
const { providers } = providersClosedAfterEach(() => Promise.all(admins.map((admin) => admin.call('CLIENT', 'UNPAUSE'))));

/** CLIENT LIST shows a connection whose EVALSHA is held by the pause. */
async function evalshaHeld(admin: Redis): Promise<boolean> {
  const clients = String(await admin.call('CLIENT', 'LIST')).split('\n');
  return clients.some((line) => / flags=\S*b\S* /.test(line) && / cmd=evalsha /.test(line));
}

async function evalCalls(admin: Redis): Promise<number> {
  const line = (await admin.info('commandstats')).split('\n').find((entry) => entry.startsWith('cmdstat_eval:'));
  return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

describe.skipIf(three.length === 0)('a quorum of 3: an attempt abandoned while the nodes load its script', { timeout: 30_000 }, () => {
  test('each node is undone after its late EVAL, so the key is not left held by nobody', async () => {
    const url = quorumUrl(three.map((node) => node.url));
    const provider = createRedisProvider({ url, pollIntervalMs: 60_000 });
    providers.push(provider);
    const key = `quorum-late-script-load/${process.pid}`;
    const lockKey = `${DEFAULT_PREFIX}${key}`;
    await provider.inspect(key);
    for (const admin of admins) {
      // The release script is known to the nodes, the grant script is not (loaded later by EVAL).
      await admin.script('FLUSH');
      await QUORUM_RELEASE.load(admin);
      await admin.config('RESETSTAT');
      await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    }
    const abort = new AbortController();
    const attempt = provider.tryAcquire(key, { ttlMs: 20_000, signal: abort.signal }).catch((error: unknown) => error);
    for (const admin of admins) await until(() => evalshaHeld(admin), 5000, 'the grant script is held by the pause');
    abort.abort(new Error('the caller gave up'));
    expect(await within(attempt, 2000, 'the attempt rejects'), 'with the abort').toMatchObject({ code: 'HOLDFAST_ABORTED' });
    await Promise.all(admins.map((admin) => admin.call('CLIENT', 'UNPAUSE')));
    for (const admin of admins) {
      await until(async () => (await evalCalls(admin)) > 0, 3000, 'the grant script, unknown to the node, is sent again as EVAL');
      expect(await admin.hexists(`{${lockKey}}//fence`, 'fence'), 'the late EVAL granted the key (its token was drawn)').toBe(1);
    }
    for (const admin of admins) await until(async () => (await admin.exists(lockKey)) === 0, 3000, 'the late grant is undone');
    const other = createRedisProvider({ url });
    providers.push(other);
    const lock = await other.tryAcquire(key);
    expect(lock, 'another provider gets the key at once').not.toBeNull();
    await lock?.release();
  });

  test('a release waits for a repair still in flight, whose late SET NX would put the key back', async () => {
    const [, , c] = admins as [Redis, Redis, Redis];
    const provider = createRedisProvider({ url: quorumUrl(three.map((node) => node.url)), pollIntervalMs: 60_000 });
    providers.push(provider);
    const key = `quorum-late-repair/${process.pid}`;
    const lockKey = `${DEFAULT_PREFIX}${key}`;
    const lock = await provider.acquire(key, { ttlMs: 20_000, waitMs: 5000 });
    // c forgets the key and the scripts (as after a restart without persistence); it knows QUORUM_RELEASE only.
    await c.del(lockKey);
    await c.script('FLUSH');
    await QUORUM_RELEASE.load(c);
    await c.config('RESETSTAT');
    await c.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    // a and b renew it; c's answer is held, so the renewal repairs c (REPAIR, unknown to c) in the background.
    await within(lock.extend(), 3000, 'the renewal decided by a and b');
    await until(() => evalshaHeld(c), 5000, "the renewal's script is held by the pause on c");
    await within(lock.release(), 3000, 'the release decided by a and b');
    await c.call('CLIENT', 'UNPAUSE');
    await until(async () => (await evalCalls(c)) >= 2, 3000, 'the renewal and the repair, unknown to c, are sent again as EVAL');
    await until(async () => (await c.exists(lockKey)) === 0, 3000, 'the key is not left on c after the release');
  });
});
