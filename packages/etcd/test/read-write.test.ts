import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { busy, type LockMode, type ModeRequest, type QueuePlace } from '@holdfast/core/backend';
import { codeOf, within } from '@holdfast/test-harness/helpers';
import { etcdctlBinary } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { EtcdBackend } from '../src/backend.js';
import type { EtcdWake } from '../src/context.js';
import { createEtcdProvider } from '../src/index.js';
import { prefixEnd, range } from '../src/kv.js';
import { resolveOptions } from '../src/options.js';
import { EtcdRpc } from '../src/rpc.js';
import { etcdctlLock, heldKey, stop, stopAll } from './etcdctl.js';

// rwmutex.go's recipe on the mutex's entries: "read-" / "write-" entries in the key's directory, one
// line by create revision, and a waiter that watches one entry.

const etcd = await useBackend('etcd');
const noEtcdctl = await needLocalBinary('etcdctl');
const binary = await etcdctlBinary();
const PREFIX = 'holdfast-rw-protocol';
/** One call's bound on a loaded machine (a round trip or two to a local member). */
const CALL_MS = 5000;
/** A waiter's wait: long enough that only an event ends it within a test. */
const WAIT_MS = 60_000;
/** How long etcdctl is given to (wrongly) take a lock that is held: it would print its key in a round trip. */
const ETCDCTL_REFUSED_MS = 1500;

const call = () => ({ signal: AbortSignal.timeout(CALL_MS) });
const placeOf = (): QueuePlace => ({ id: randomUUID(), until: Date.now() + WAIT_MS });

function modeRequest(key: string, mode: LockMode, place?: QueuePlace): ModeRequest {
  return {
    key,
    mode,
    lockId: randomUUID(),
    owner: 'protocol test',
    reason: undefined,
    ttlMs: 30_000,
    autoRenew: true,
    onLost: () => undefined,
    ...(place ? { place } : {}),
  };
}

describe.skipIf(!etcd.url)(`etcd read-write locks (${etcd.label})`, () => {
  const endpoint = etcd.url?.replace('etcd://', '') ?? '';
  const cleanups: (() => Promise<unknown>)[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    await stopAll(children);
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const backend = (): EtcdBackend => {
    const made = new EtcdBackend(resolveOptions({ endpoints: [endpoint], prefix: PREFIX }));
    cleanups.push(() => made.close(call()));
    return made;
  };
  const provider = (): LockProvider => {
    const made = createEtcdProvider({ endpoints: [endpoint], prefix: PREFIX });
    cleanups.push(() => made.close());
    return made;
  };
  /** The names of a key's entries in line order (by create revision), read with a channel of the test's own. */
  const lineOf = async (key: string): Promise<string[]> => {
    const rpc = new EtcdRpc(resolveOptions({ endpoints: [endpoint], prefix: PREFIX }).connection);
    try {
      const dir = Buffer.from(`${PREFIX}/${key}/`);
      const res = await range(rpc, { key: dir, range_end: prefixEnd(dir), sort_order: 'ASCEND', sort_target: 'CREATE' }, call().signal);
      return res.kvs.map((kv) => kv.key.toString().slice(dir.length));
    } finally {
      rpc.close();
    }
  };

  test('entries are "read-" and "write-" entries of the key\'s directory, in one line: a reader after a waiting writer waits', async () => {
    const be = backend();
    const key = `layout-${randomUUID()}`;
    const reader = await be.tryGrantMode(modeRequest(key, 'shared'), call());
    expect(reader.granted, 'a free key refused a reader').toBe(true);
    const writerPlace = placeOf();
    expect((await be.tryGrantMode(modeRequest(key, 'exclusive', writerPlace), call())).granted, 'a writer beside a reader').toBe(false);
    const line = await lineOf(key);
    expect(line).toHaveLength(2);
    expect(line[0]).toMatch(/^read-[0-9a-f]+-/);
    expect(line[1]).toMatch(new RegExp(`^write-[0-9a-f]+-${writerPlace.id}$`));
    expect((await be.tryGrantMode(modeRequest(key, 'shared'), call())).granted, 'a reader overtook a waiting writer').toBe(false);
    expect(await lineOf(key), 'a single attempt left its entry').toHaveLength(2);
    expect((await be.modeHolders(key, call())).map((h) => h.details?.['mode'])).toEqual(['shared']);
    await be.leaveQueue(key, writerPlace, call());
    if (reader.granted) await reader.grant.release(call());
    expect(await lineOf(key), 'entries left after release').toEqual([]);
  });

  test('a reader waits on the last writer before it, a writer on the entry just before it; only that deletion wakes them', async () => {
    const be = backend();
    const key = `watch-${randomUUID()}`;
    const first = await be.tryGrantMode(modeRequest(key, 'exclusive'), call());
    if (!first.granted) throw new Error('a free key refused a writer');
    const readerPlace = placeOf();
    const reader = await be.tryGrantMode(modeRequest(key, 'shared', readerPlace), call());
    const writerPlace = placeOf();
    const writer = await be.tryGrantMode(modeRequest(key, 'exclusive', writerPlace), call());
    const laterPlace = placeOf();
    const later = await be.tryGrantMode(modeRequest(key, 'shared', laterPlace), call());
    const line = await lineOf(key);
    const predecessor = (outcome: typeof reader): string | undefined =>
      outcome.granted ? undefined : outcome.wake?.predecessor?.toString().slice(`${PREFIX}/${key}/`.length);
    expect(predecessor(reader), 'the reader watches the writer before it').toBe(line[0]);
    expect(predecessor(writer), 'the writer watches the entry just before it (a reader)').toBe(line[1]);
    expect(predecessor(later), 'a reader watches the last writer before it').toBe(line[2]);

    let readerWoken = false;
    const readerWait = be
      .waitForChange(key, reader as never, { signal: AbortSignal.timeout(WAIT_MS), timeoutMs: WAIT_MS, place: readerPlace })
      .then(() => (readerWoken = true));
    // An observer of the whole directory from the same revision, on the provider's one watch stream:
    // its wake proves that stream carried the changes below.
    const seen = later.granted ? undefined : later.wake;
    const observed = be.waitForChange(key, busy<EtcdWake>({ revision: seen!.revision }), {
      signal: AbortSignal.timeout(WAIT_MS),
      timeoutMs: WAIT_MS,
    });
    await be.leaveQueue(key, laterPlace, call());
    await be.leaveQueue(key, writerPlace, call());
    await within(observed, CALL_MS, 'the observer hears the line change');
    await new Promise((resolve) => setImmediate(resolve));
    expect(readerWoken, "the reader was woken by entries that are not the writer's before it").toBe(false);
    await first.grant.release(call());
    await within(readerWait, CALL_MS, "the reader is woken by the writer's deletion");
    const granted = await be.tryGrantMode(modeRequest(key, 'shared', readerPlace), call());
    expect(granted.granted, 'the reader holds once the writer before it left').toBe(true);
    if (granted.granted) await granted.grant.release(call());
  });

  test('a plain lock of a read-write key is a conflict, and a read-write attempt on a plain lock is one too', async () => {
    const locks = provider();
    const key = `conflict-${randomUUID()}`;
    const reader = await within(locks.readWrite(key).tryRead(), CALL_MS, 'tryRead answers');
    expect(reader).not.toBeNull();
    expect(codeOf(await locks.tryAcquire(key).catch((error: unknown) => error))).toBe(ErrorCode.Conflict);
    expect(
      codeOf(
        await locks
          .semaphore(key, 2)
          .tryAcquire()
          .catch((error: unknown) => error),
      ),
    ).toBe(ErrorCode.Conflict);
    expect(await within(locks.inspect(key), CALL_MS, 'inspect answers'), 'inspect shows a read-write holder').toBeNull();
    expect((await within(locks.list({ prefix: key }), CALL_MS, 'list answers')).map((l) => l.key)).toEqual([]);
    await within(reader!.release(), CALL_MS, 'release answers');
    const plain = await within(locks.tryAcquire(key), CALL_MS, 'tryAcquire answers');
    expect(plain).not.toBeNull();
    expect(
      codeOf(
        await locks
          .readWrite(key)
          .tryWrite()
          .catch((error: unknown) => error),
      ),
    ).toBe(ErrorCode.Conflict);
    expect(await lineOf(key), 'the refused attempt left its entry').toHaveLength(1);
    await within(plain!.release(), CALL_MS, 'release answers');
  });

  test.skipIf(noEtcdctl !== null)(
    "`etcdctl lock` of the key waits for Holdfast's readers, and they wait for it as for a writer",
    async () => {
      const locks = provider();
      const key = `etcdctl-${randomUUID()}`;
      const rw = locks.readWrite(key);
      const reader = await within(rw.tryRead(), CALL_MS, 'tryRead answers');
      expect(reader).not.toBeNull();
      const etcdctl = etcdctlLock(binary!, endpoint, `${PREFIX}/${key}`, children);
      expect(await heldKey(etcdctl, `${PREFIX}/${key}`, ETCDCTL_REFUSED_MS), 'etcdctl took a key Holdfast reads').toBeNull();
      await within(reader!.release(), CALL_MS, 'release answers');
      const etcdctlKey = await heldKey(etcdctl, `${PREFIX}/${key}`, CALL_MS);
      expect(etcdctlKey, 'etcdctl did not take the key the reader released').not.toBeNull();
      expect(await within(rw.tryRead(), CALL_MS, 'tryRead answers'), "a reader got in beside etcdctl's lock").toBeNull();
      const reading = rw.read({ waitMs: WAIT_MS });
      reading.catch(() => undefined);
      await stop(etcdctl);
      const granted = await within(reading, CALL_MS + ETCDCTL_REFUSED_MS, 'the reader is granted once etcdctl unlocked');
      await within(granted.release(), CALL_MS, 'release answers');
    },
  );
});
