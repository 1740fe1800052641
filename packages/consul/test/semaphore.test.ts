import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, elapsed, lostWithin, within } from '@holdfast/test-harness/helpers';
import { consulBinary } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';
import { printed } from './child-output.js';
import { consulLock, stopAll } from './consul-lock-cli.js';

const consul = await useBackend('consul');
const binary = await consulBinary();
const PREFIX = 'holdfast-sem';
const CALL_MS = 5000;

describe.skipIf(!consul.url || !binary)("semaphores on Consul's own protocol, shared with `consul lock -n N`", () => {
  const agent = consul.url?.replace('consul://', '') ?? '';
  const http = `http://${agent}`;
  const providers: LockProvider[] = [];
  const children: ChildProcess[] = [];
  const provider = (): LockProvider => {
    const created = createConsulProvider({ url: http, prefix: PREFIX, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  /** `consul lock [-n=N] <extra> holdfast-sem/<key> <command>`: Holdfast key <key> as Go's semaphore prefix. */
  const goLock = (key: string, n: number, command: string, extra: string[] = []) =>
    consulLock(binary!, agent, [`-n=${n}`, ...extra, `${PREFIX}/${key}`, command], children);
  const exitCode = async (child: ChildProcess, what: string): Promise<number | null> =>
    ((await within(once(child, 'exit'), 15_000, what)) as [number | null])[0];
  afterEach(async () => {
    await stopAll(children);
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
  });

  test('`consul lock -n 2` holds a slot, Holdfast takes the other and is refused a third; each side waits for the other', async () => {
    const key = `shared-${randomBytes(4).toString('hex')}`;
    const go = goLock(key, 2, 'echo HELD; exec sleep 60');
    expect(await printed(go.lines, 'HELD', 10_000), 'consul lock -n 2 got no slot of a free semaphore').toBe(true);
    const [a, b] = [provider(), provider()];
    const slot = await within(a.semaphore(key, 2).tryAcquire({ reason: 'interop' }), CALL_MS, 'tryAcquire answers');
    expect(slot, "the slot beside consul lock's was not granted").not.toBeNull();
    expect(
      await within(b.semaphore(key, 2).tryAcquire(), CALL_MS, 'tryAcquire answers'),
      'a third holder got a slot of a semaphore of 2',
    ).toBeNull();
    const holders = await within(b.semaphore(key, 2).holders(), CALL_MS, 'holders() answers');
    expect(holders.map((holder) => holder.details?.['holdfast']).sort(), 'holders() shows both, the Go one as foreign').toEqual([
      false,
      true,
    ]);
    expect(holders.find((holder) => holder.details?.['holdfast'])?.token, "holders() reports the Holdfast slot's token").toBe(slot!.token);

    // The Go client counts Holdfast's slot: the semaphore is full, its try-once fails.
    const refused = goLock(key, 2, 'echo ALSO', ['-timeout=1s']);
    expect(await exitCode(refused.child, 'a try-once consul lock -n 2 exits'), 'consul lock -n 2 got a third slot').not.toBe(0);
    expect(refused.lines).not.toContain('ALSO');
    // Another limit is a conflict on both sides; so is a plain lock on the prefix (same .lock key, other flags).
    const wider = await within(
      b
        .semaphore(key, 3)
        .tryAcquire()
        .catch((error: unknown) => error),
      CALL_MS,
      'tryAcquire answers',
    );
    expect(codeOf(wider), 'a semaphore of 2 in use accepted limit 3').toBe(ErrorCode.Conflict);
    const goWider = goLock(key, 3, 'echo THREE', ['-timeout=1s']);
    expect(await exitCode(goWider.child, 'consul lock -n 3 exits'), 'consul lock -n 3 ran on a semaphore of 2').not.toBe(0);
    expect(goWider.errors.join('\n')).toMatch(/limit conflict/);
    const goMutex = goLock(key, 1, 'echo MUTEX', ['-timeout=1s']);
    expect(await exitCode(goMutex.child, 'consul lock -n 1 exits'), 'consul lock took a semaphore prefix as a lock').not.toBe(0);
    expect(goMutex.errors.join('\n')).toMatch(/does not match lock use/i);

    // The Go holder leaves: a waiting Holdfast acquire is woken by its release.
    const waiting = elapsed(() => b.semaphore(key, 2).acquire({ waitMs: 15_000 }));
    go.child.kill('SIGTERM');
    const next = await within(waiting, 16_000, 'the waiting acquire gets the slot consul lock left');
    expect(next.ms, 'the waiter was woken late after consul lock released').toBeLessThan(5000);
    expect(next.value.token > slot!.token, 'a later slot grant has a lower token').toBe(true);
    // Both slots are Holdfast's now: a waiting `consul lock -n 2` runs once one of them is released.
    const goWaiting = goLock(key, 2, 'echo HELD AGAIN; exec sleep 60');
    expect(await printed(goWaiting.lines, 'HELD AGAIN', 1500), 'consul lock -n 2 ran while both slots were held').toBe(false);
    await within(slot!.release(), CALL_MS, 'release answers');
    expect(await printed(goWaiting.lines, 'HELD AGAIN', 10_000), 'consul lock -n 2 did not get the released slot').toBe(true);
    await within(next.value.release(), CALL_MS, 'release answers');
  });

  test('forceRelease frees every slot: a `consul lock -n 2` holder and a Holdfast holder both learn it', async () => {
    const key = `forced-${randomBytes(4).toString('hex')}`;
    const go = goLock(key, 2, 'echo HELD; exec sleep 60');
    expect(await printed(go.lines, 'HELD', 10_000), 'consul lock -n 2 got no slot of a free semaphore').toBe(true);
    const locks = provider();
    const slot = await within(locks.semaphore(key, 2).tryAcquire(), CALL_MS, 'tryAcquire answers');
    expect(slot, 'a free slot was not granted').not.toBeNull();
    const goExited = once(go.child, 'exit');
    expect(
      await within(provider().forceRelease(key), CALL_MS, 'forceRelease answers'),
      'forceRelease of a held semaphore said it was free',
    ).toBe(true);
    expect(codeOf(await lostWithin(slot!, 2000, 'the Holdfast holder is told')), 'the holder was not told its slot was lost').toBe(
      ErrorCode.Lost,
    );
    await within(goExited, 10_000, 'consul lock ends its child and exits once its slot is gone');
    expect(await within(locks.semaphore(key, 2).holders(), CALL_MS, 'holders() answers'), 'holders() after forceRelease').toEqual([]);
  });

  test('a holder whose session is destroyed is told at once, and its slot goes to a waiter', async () => {
    const key = `invalidated-${randomBytes(4).toString('hex')}`;
    const [a, b] = [provider(), provider()];
    const held = await within(a.semaphore(key, 1).tryAcquire(), CALL_MS, 'tryAcquire answers');
    expect(held, 'a free slot was not granted').not.toBeNull();
    const [info] = await within(a.semaphore(key, 1).holders(), CALL_MS, 'holders() answers');
    const session = info?.details?.['session'];
    expect(typeof session, "holders() does not name the slot's session").toBe('string');
    const waiting = elapsed(() => b.semaphore(key, 1).acquire({ waitMs: 10_000 }));
    const destroyed = await fetch(`${http}/v1/session/destroy/${session}`, { method: 'PUT', signal: AbortSignal.timeout(CALL_MS) });
    expect(destroyed.ok, 'Consul refused to destroy the session').toBe(true);
    const reason = await lostWithin(held!, 2000, 'the holder of a destroyed session is told');
    expect(codeOf(reason)).toBe(ErrorCode.Lost);
    expect(String((reason as Error).message)).toMatch(/session/);
    const next = await within(waiting, 11_000, 'the waiter gets the freed slot');
    expect(next.ms, 'the slot of a destroyed session was handed on late').toBeLessThan(2000);
    expect(next.value.token > held!.token, 'a later slot grant has a lower token').toBe(true);
    const holders = await within(b.semaphore(key, 1).holders(), CALL_MS, 'holders() answers');
    expect(
      holders.map((holder) => holder.token),
      'the dead holder is still counted',
    ).toEqual([next.value.token]);
    await within(next.value.release(), CALL_MS, 'release answers');
  });
});
