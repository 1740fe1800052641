import { ErrorCode, type Lock, type LockProvider, type ReadWriteLock } from '@holdfast/core';
import { expect, type TestContext, test } from 'vitest';
import { abortedWithin, codeOf } from '../helpers/index.js';
import { FencedResource } from './fencing.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, skipBecause } from './support.js';

/** The key's read-write lock, or null after skipping the case (with the reason printed) when the backend has none. */
export function readWriteOf(t: TestContext, c: CaseContext, locks: LockProvider, key: string): ReadWriteLock | null {
  try {
    return locks.readWrite(key);
  } catch (error) {
    if (codeOf(error) !== ErrorCode.Unsupported) throw error;
    skipBecause(t, `${c.target.name} has no read-write locks: ${(error as Error).message}`);
    return null;
  }
}

export function readWriteCases(cases: CaseFactory): void {
  test.concurrent('83. readers of a key coexist across instances; a writer waits for all of them; the key is no plain lock meanwhile', async (t) => {
    const c = cases(t);
    const [a, b] = await c.providers2();
    const key = c.key('rw');
    const rwA = readWriteOf(t, c, a, key);
    if (!rwA) return;
    const rwB = b.readWrite(key);
    const first = await c.within('tryRead answers', rwA.tryRead({ reason: 'reader one' }));
    const second = await c.within('tryRead answers', rwB.tryRead({ reason: 'reader two' }));
    expect(first && second, 'a second reader was refused while only a reader held the key').toBeTruthy();
    const holders = await c.within('holders() answers', rwB.holders());
    expect(holders.map((h) => h.owner).sort(), 'holders() names both readers').toEqual([a.owner, b.owner].sort());
    expect(
      holders.map((h) => h.details?.['mode']),
      'holders() says how they hold',
    ).toEqual(['shared', 'shared']);
    expect(await c.within('tryWrite answers', rwB.tryWrite()), 'a writer was granted while readers held the key').toBeNull();
    // Refused either way: a conflict where the backend tells the kinds apart, busy where a plain lock only finds the key taken (Redis).
    const plain = await c.within(
      'tryAcquire answers',
      b.tryAcquire(key).catch((error: unknown) => codeOf(error)),
    );
    expect(plain, 'a plain lock of a key read-locked').toSatisfy((answer) => answer === null || answer === ErrorCode.Conflict);
    await c.within('release answers', first!.release());
    expect(await c.within('tryWrite answers', rwB.tryWrite()), 'a writer was granted while one reader still held the key').toBeNull();
    expect(second!.signal.aborted, "one reader's release aborted another's signal").toBe(false);
    const waitMs = c.timing.promptWakeMs + c.timing.slackMs;
    const writer = rwA.write({ waitMs });
    await c.within('release answers', second!.release());
    const wrote = await c.within('the writer is granted once the last reader released', writer, waitMs + c.timing.slackMs);
    expect(await c.within('tryRead answers', rwB.tryRead()), 'a reader was granted while a writer held the key').toBeNull();
    await c.within('release answers', wrote.release());
    expect(await c.within('holders() answers', rwA.holders()), 'holders() after every grant was released').toEqual([]);
  });

  test.concurrent('84. a writer excludes readers and writers across instances; a fenced store refuses a stale reader', async (t) => {
    const c = cases(t);
    const instances = [await c.provider(), await c.provider(), await c.provider()];
    const key = c.key('rw-fenced');
    const rws = instances.map((locks) => readWriteOf(t, c, locks, key));
    if (rws.some((rw) => rw === null)) return;
    const store = new FencedResource();
    let readers = 0;
    let writers = 0;
    let mostReaders = 0;
    const broken: string[] = [];
    let grants = 0;
    const waitMs = 10 * (c.timing.promptWakeMs + c.timing.slackMs);
    const holdMs = Math.max(3, c.timing.promptWakeMs / 40);
    const work = async (rw: ReadWriteLock, writing: boolean): Promise<void> => {
      while (grants < 40) {
        const askedAt = performance.now();
        const lock = writing ? await rw.write({ waitMs }) : await rw.read({ waitMs });
        // Held at least as long as this grant took to come: on a backend whose grants take longer than
        // holdMs (FerretDB), a reader would otherwise be gone before the next reader's grant could land,
        // and readers that may coexist would never get to.
        const heldMs = Math.max(holdMs, Math.min(performance.now() - askedAt, 4 * holdMs));
        grants++;
        if (writing) {
          if (readers > 0 || writers > 0) broken.push(`a writer got in beside ${readers} readers and ${writers} writers`);
          writers++;
          if (!store.write(lock.token, 'writer')) broken.push(`the store refused a current writer's token ${lock.token}`);
        } else {
          if (writers > 0) broken.push('a reader got in beside a writer');
          mostReaders = Math.max(mostReaders, ++readers);
        }
        await new Promise((resolve) => setTimeout(resolve, heldMs));
        if (writing) writers--;
        else readers--;
        await lock.release();
      }
    };
    const workers = rws.flatMap((rw, i) => [work(rw!, i === 0), work(rw!, false), work(rw!, i === 1)]);
    await c.within('40 read-write grants between nine workers', Promise.all(workers), 40 * (c.timing.promptWakeMs + c.timing.slackMs));
    expect(broken, 'exclusion of a read-write lock').toEqual([]);
    expect(mostReaders, 'readers never held the key together: a read-write lock that behaves as a mutex').toBeGreaterThan(1);
    // A reader granted before a writer is stale once the writer wrote: its fenced write must be refused.
    const reader = await c.within('tryRead answers', rws[0]!.tryRead());
    expect(reader, 'a free key refused a reader').not.toBeNull();
    await c.within('release answers', reader!.release());
    const writer = await c.within('tryWrite answers', rws[1]!.tryWrite());
    expect(writer, 'a free key refused a writer').not.toBeNull();
    if (c.capabilities.fencing === 'strict') {
      expect(store.write(writer!.token, 'last writer'), "the store refused the last writer's token").toBe(true);
      expect(store.write(reader!.token, 'stale reader'), "a stale reader's write was accepted after a writer's").toBe(false);
    }
    await c.within('release answers', writer!.release());
  });

  test.concurrent('85. a waiting writer is not overtaken by readers that come after it (where capabilities.writerPreferred)', async (t) => {
    const c = cases(t);
    if (!c.capabilities.writerPreferred) return skipBecause(t, `${c.target.name} does not claim writerPreferred`);
    const [a, b] = await c.providers2();
    const key = c.key('rw-starve');
    const rwA = readWriteOf(t, c, a, key);
    if (!rwA) return;
    const rwB = b.readWrite(key);
    const holding = await c.within('tryRead answers', rwA.tryRead());
    expect(holding, 'a free key refused a reader').not.toBeNull();
    const waitMs = 4 * (c.timing.promptWakeMs + c.timing.slackMs);
    const order: string[] = [];
    const writer = rwB.write({ waitMs }).then((lock) => {
      order.push('writer');
      return lock;
    });
    // Settled by the case, or by the provider's close when the case fails first: never an unhandled rejection.
    writer.catch(() => undefined);
    // A reader granted before the writer joined its line is let go at once: kept, it would hold the key
    // for the whole case (a queue backend's writer joins a round trip or two after write() is called).
    await c.until(
      'the writer waits in line',
      async () => {
        const early = await rwB.tryRead();
        await early?.release();
        return early === null;
      },
      c.timing.callMs,
    );
    // The stream of readers: each comes after the waiting writer, so none may get in before it.
    const later: Promise<Lock>[] = [];
    for (let i = 0; i < 3; i++) {
      expect(await c.within('tryRead answers', rwA.tryRead()), 'a reader overtook a waiting writer').toBeNull();
      const reader = rwA.read({ waitMs }).then((lock) => {
        order.push('reader');
        return lock;
      });
      reader.catch(() => undefined);
      later.push(reader);
    }
    await c.within('release answers', holding!.release());
    const wrote = await c.within('the writer is granted', writer, waitMs + c.timing.slackMs);
    expect(order, 'readers that came after a waiting writer got in first').toEqual(['writer']);
    await c.within('release answers', wrote.release());
    const readers = await c.within('the later readers are granted together', Promise.all(later), waitMs + c.timing.slackMs);
    expect(order).toEqual(['writer', 'reader', 'reader', 'reader']);
    await c.within('release answers', Promise.all(readers.map((lock) => lock.release())));
  });

  test.concurrent('86. read-write tokens strictly increase per key across readers and writers', async (t) => {
    const c = cases(t);
    if (c.capabilities.fencing !== 'strict') return skipBecause(t, `${c.target.name} declares fencing "${c.capabilities.fencing}"`);
    const [a, b] = await c.providers2();
    const key = c.key('rw-tokens');
    const rwA = readWriteOf(t, c, a, key);
    if (!rwA) return;
    const rwB = b.readWrite(key);
    const tokens: bigint[] = [];
    const take = async (what: string, lock: Promise<Lock | null>): Promise<Lock> => {
      const taken = await c.within(`${what} answers`, lock);
      expect(taken, `${what}: a grant that fits was refused`).not.toBeNull();
      tokens.push(taken!.token);
      return taken!;
    };
    const r1 = await take('tryRead', rwA.tryRead());
    const r2 = await take('tryRead', rwB.tryRead());
    await c.within('release answers', Promise.all([r1.release(), r2.release()]));
    const w1 = await take('tryWrite', rwB.tryWrite());
    await c.within('release answers', w1.release());
    const r3 = await take('tryRead', rwA.tryRead());
    await c.within('release answers', r3.release());
    const w2 = await take('tryWrite', rwA.tryWrite());
    await c.within('forceRelease answers', b.forceRelease(key));
    await take('tryRead after a forced release', rwB.tryRead());
    // Told by a push from the backend (another provider released it), not necessarily before b's next grant.
    if (c.target.forcedReleaseToldAtRenewal === undefined) {
      await abortedWithin(w2.signal, c.timing.promptWakeMs + c.timing.slackMs, 'a force-released writer is told');
    }
    for (let i = 1; i < tokens.length; i++)
      expect(tokens[i]!, `grant ${i} did not get a higher token: ${tokens.join(',')}`).toBeGreaterThan(tokens[i - 1]!);
  });
}
