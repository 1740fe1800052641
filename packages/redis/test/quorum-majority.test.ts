import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { LockProvider } from '@holdfast/core';
import { until, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { DEFAULT_PREFIX } from '../src/index.js';
import { providersClosedAfterEach, threeNodes } from './fixture.js';
import { quorumUrl } from './quorum-url.js';
import { onNode, type RedisProcess } from './redis-process.js';

// A quorum grant is decided by the first majority's answers (as Redlock does); the third node's
// answer comes later. Nodes are paused with SIGSTOP to choose which majority decides.

const three = await threeNodes();

let keyCount = 0;
const newKey = (): string => `quorum-majority/${process.pid}/${Date.now()}-${++keyCount}`;
const tracked = providersClosedAfterEach(() => {
  for (const node of three) node.resume();
});
const open = (): LockProvider => tracked.open({ url: quorumUrl(three.map((node) => node.url)) });

describe.skipIf(three.length === 0)('a quorum of 3: grants decided by the first majority', { timeout: 30_000 }, () => {
  test('tokens keep increasing when two grants are decided by different majorities and one node counts ahead', async () => {
    const [a, , c] = three as [RedisProcess, RedisProcess, RedisProcess];
    const locks = open();
    const key = newKey();
    const warmUp = await within(locks.tryAcquire(key), 5000, 'first grant');
    await within(warmUp!.release(), 5000, 'release');
    // Node a counts far ahead, as a node does whose counter started afresh at its clock after a restart.
    await onNode(a, (client) => client.hincrby(`{${DEFAULT_PREFIX}${key}}//fence`, 'fence', 1_000_000_000));

    const fenceOfC = async (): Promise<number> =>
      Number(await onNode(c, (client) => client.hget(`{${DEFAULT_PREFIX}${key}}//fence`, 'fence')));
    const counterOfC = await fenceOfC();
    c.pause();
    const first = await within(locks.tryAcquire(key), 5000, 'grant decided by a and b');
    expect(first).not.toBeNull();
    await within(first!.release(), 5000, 'release decided by a and b');
    c.resume();
    // c must have run the queued grant (its counter moved) and then the release, which is sent only once
    // that grant has settled there (SentCommands): a grant asked before the release lands could reach c
    // first and find the key busy, and with a paused no majority would form.
    await within(locks.inspect(key), 5000, 'inspect');
    await until(
      async () => (await fenceOfC()) > counterOfC && (await onNode(c, (client) => client.exists(`${DEFAULT_PREFIX}${key}`))) === 0,
      5000,
      'c ran the queued grant and its release',
    );

    a.pause();
    const second = await within(locks.tryAcquire(key), 5000, 'grant decided by b and c');
    expect(second).not.toBeNull();
    expect(second!.token > first!.token, `token ${second!.token} after ${first!.token}`).toBe(true);
    a.resume();
    expect((await within(locks.inspect(key), 5000, 'inspect'))?.token, 'inspect reports another token than the holder has').toBe(
      second!.token,
    );
    await within(second!.release(), 5000, 'release');
  });

  test('a holder killed right after a grant decided by a and b leaves b counting past its token, even with the script cache of b empty', async () => {
    const [a, b, c] = three as [RedisProcess, RedisProcess, RedisProcess];
    const locks = open();
    const key = newKey();
    const lockKey = `${DEFAULT_PREFIX}${key}`;
    const fence = `{${lockKey}}//fence`;
    const warmUp = await within(locks.tryAcquire(key), 5000, 'first grant');
    await within(warmUp!.release(), 5000, 'release');
    await onNode(a, (client) => client.hincrby(fence, 'fence', 1_000_000_000));
    // b's script cache is empty, as after a restart with persistence: EVALSHA answers NOSCRIPT there.
    await onNode(b, (client) => client.script('FLUSH'));

    c.pause();
    // The built provider (dist/) in a child that SIGKILLs itself once the grant is handed out: whatever it
    // had not yet sent to b is lost, as in a crash.
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./quorum-killed-holder.mjs', import.meta.url)), quorumUrl(three.map((node) => node.url)), key],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let printed = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
    });
    try {
      await within(once(child, 'exit'), 20_000, 'the child holder takes the lock and is killed');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    expect(printed.trim(), 'the child holder got no grant').toMatch(/^\d+$/);
    const killedToken = BigInt(printed.trim());
    // The killed holder's lease runs out on a and b (c never ran its grant yet: it is paused).
    await until(
      async () => (await onNode(a, (client) => client.exists(lockKey))) + (await onNode(b, (client) => client.exists(lockKey))) === 0,
      5000,
      "the killed holder's lease ends on a and b",
    );

    c.resume();
    a.pause();
    const next = await within(locks.tryAcquire(key), 5000, 'grant decided by b and c');
    expect(next).not.toBeNull();
    expect(next!.token > killedToken, `token ${next!.token} after the killed holder's ${killedToken}`).toBe(true);
    await within(next!.release(), 5000, 'release');
  });

  test('a grant decided before a node was first reached is released there too: nothing is left behind', async () => {
    const [, , c] = three as [RedisProcess, RedisProcess, RedisProcess];
    // c accepts the connection but answers nothing: the provider's first connection to it is not ready.
    c.pause();
    const locks = open();
    const key = newKey();
    const lock = await within(locks.tryAcquire(key), 5000, 'grant decided by a and b');
    expect(lock).not.toBeNull();
    await within(lock!.release(), 5000, 'release decided by a and b');
    c.resume();
    // An inspect waits for every node: it follows the grant and the release on c's first connection.
    expect(await within(locks.inspect(key), 5000, 'inspect')).toBeNull();
    expect(await onNode(c, (client) => client.get(`${DEFAULT_PREFIX}${key}`)), 'c kept the released grant').toBeNull();
  });

  test('a node that grants after the majority decided votes too: a restart of another node leaves the holder its majority', async () => {
    const [a, , c] = three as [RedisProcess, RedisProcess, RedisProcess];
    const [locks, other] = [open(), open()];
    const key = newKey();
    await within(locks.inspect(key), 5000, 'connect');
    c.pause();
    const lock = await within(locks.tryAcquire(key, { ttlMs: 10_000 }), 5000, 'grant decided by a and b');
    expect(lock).not.toBeNull();
    c.resume();
    // c's answer to the grant comes before its answer to this inspect, on the same connection.
    expect((await within(locks.inspect(key), 5000, 'inspect'))?.details?.holdingNodes).toBe(3);
    await a.restart();
    // a forgot the key and its vote went with the connection; b and c still hold it.
    expect(await within(other.tryAcquire(key), 5000, 'tryAcquire of the held key')).toBeNull();
    expect(await within(lock!.isHeld(), 5000, 'isHeld')).toBe(true);
    expect(lock!.signal.aborted, 'the holder was told it lost a lock that b and c still hold').toBe(false);
    await within(lock!.release(), 5000, 'release');
  });
});
